#!/usr/bin/env bash
# Runs every Go fuzz target in the module for a short time (FUZZTIME, default 8s).
# Targets are discovered, so a new Fuzz function is fuzzed without editing this file.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${FUZZTIME:-8s}
# Minimizing each new interesting input re-runs the target thousands of
# times on shrinking copies of it (up to 60 s per input by default): in a
# short run that is all the workers do (a target seeded with 16 KiB .mmdb
# files ran 55 inputs in 6 s, and one still minimizing at the deadline fails
# with "context deadline exceeded"). Short runs explore instead; a crasher
# is still written to testdata/fuzz, unminimized. FUZZMINIMIZETIME=60s
# restores Go's default for a long run.
minimizetime=${FUZZMINIMIZETIME:-0}
status=0
passed=0
failed=0
while IFS= read -r file; do
  dir=$(dirname "$file")
  for name in $(grep -oE '^func (Fuzz[A-Za-z0-9_]+)\(' "$file" | sed -E 's/^func (Fuzz[A-Za-z0-9_]+)\(/\1/'); do
    echo "fuzz: ./$dir $name ($fuzztime)"
    log=$(mktemp)
    run() { go test -run='^$' -fuzz="^${name}\$" -fuzztime="$fuzztime" -fuzzminimizetime="$minimizetime" "./$dir" >"$log" 2>&1; }
    ok=0
    run && ok=1
    # The fuzzing engine can report "context deadline exceeded" when an
    # input is still running as -fuzztime ends (a race between its worker
    # and its coordinator, with no input at fault: none is written to
    # testdata/fuzz; go.dev/issue/75804, fixed in Go 1.27). That, and only
    # that, is run again, twice at most (FuzzWildcardLookup hit it twice in
    # a row once, and 0 times in 12 runs after); a failure with an input
    # is never retried.
    for again in 1 2; do
      if [ $ok = 0 ] && grep -q 'context deadline exceeded' "$log" && ! grep -q 'Failing input written' "$log"; then
        echo "fuzz: $name: the engine stopped at its deadline with no failing input; once more"
        run && ok=1
      fi
    done
    if [ $ok = 1 ]; then
      passed=$((passed + 1))
      grep -E '^fuzz: elapsed' "$log" | tail -n 1
    else
      cat "$log"
      failed=$((failed + 1))
      status=1
    fi
    rm -f "$log"
  done
done < <(grep -rlE '^func Fuzz' --include='*_test.go' . | sed 's|^\./||' | sort)
echo "fuzzing: $passed passed, $failed failed"
exit $status
