#!/usr/bin/env bash
# Fails when a file over 1 MiB (LARGE_FILE_LIMIT bytes) is tracked outside a
# testdata/ directory: build outputs, binaries and data sets do not belong
# in the repository ("make testdata" fetches the large data sets). Sizes are
# those of the blobs in git's index, i.e. what a commit would hold.
set -euo pipefail
cd "$(dirname "$0")/.."
limit=${LARGE_FILE_LIMIT:-1048576}
if ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  echo "large-files: not a git checkout; nothing to check"
  exit 0
fi
bad=$(git ls-files --format='%(objectname) %(path)' |
  git cat-file --batch-check='%(objectsize) %(rest)' |
  awk -v limit="$limit" '$1 ~ /^[0-9]+$/ && $1 > limit {
      path = substr($0, index($0, " ") + 1)
      if (path !~ /(^|\/)testdata\//) print $1 "\t" path
    }')
if [ -n "$bad" ]; then
  echo "large-files: tracked files over $limit bytes outside testdata/ (size, path):" >&2
  echo "$bad" >&2
  exit 1
fi
echo "large-files: no tracked file over $limit bytes outside testdata/"
