#!/usr/bin/env bash
# Runs every Go fuzz target in the module for a short time (FUZZTIME, default 8s).
# Targets are discovered, so a new Fuzz function is fuzzed without editing this file.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${FUZZTIME:-8s}
status=0
while IFS= read -r file; do
  dir=$(dirname "$file")
  for name in $(grep -oE '^func (Fuzz[A-Za-z0-9_]+)\(' "$file" | sed -E 's/^func (Fuzz[A-Za-z0-9_]+)\(/\1/'); do
    echo "fuzz: ./$dir $name ($fuzztime)"
    if ! go test -run='^$' -fuzz="^${name}\$" -fuzztime="$fuzztime" "./$dir" >"/tmp/fuzz-$name.log" 2>&1; then
      cat "/tmp/fuzz-$name.log"
      status=1
    fi
  done
done < <(grep -rlE '^func Fuzz' --include='*_test.go' . | sed 's|^\./||' | sort)
exit $status
