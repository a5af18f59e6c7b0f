#!/usr/bin/env bash
# Checks what "make dist" made in DIR: SHA256SUMS matches, every binary was
# built with CGO_ENABLED=0 (static), and the binaries of this machine's
# platform run and print the version with COMMIT.
#   .ci/check-dist.sh DIR COMMIT
set -euo pipefail
dir=$1 commit=$2
(cd "$dir" && sha256sum --quiet -c SHA256SUMS)
host="$(go env GOOS)-$(go env GOARCH)"
n=0
for bin in "$dir"/lut-* "$dir"/enrichd-*; do
  if ! go version -m "$bin" | grep -q 'CGO_ENABLED=0'; then
    echo "check-dist: $bin was not built with CGO_ENABLED=0" >&2
    exit 1
  fi
  case $bin in
  *-"$host")
    out=$("$bin" --version)
    case $out in
    *"commit $commit"*) echo "check-dist: $out" ;;
    *) echo "check-dist: $bin --version says \"$out\", without commit $commit" >&2; exit 1 ;;
    esac
    ;;
  esac
  n=$((n + 1))
done
echo "check-dist: $n static binaries, SHA256SUMS ok"
