#!/bin/sh
# The peer benchmark in one command: install the peers, build lut, enrichd
# and the Go clients, fetch the city MMDB (make testdata), prepare the data
# with lut sample, run every peer (3 times by default) and print the table.
#   sudo bench/peers/run.sh                          # everything
#   bench/peers/run.sh --reps 1 --only rsyslog,enrichd
# Arguments go to bench.py (--reps, --only, --tcp-peer, --stdin-peer). The
# data lives in $PEERBENCH_DATA (default .cache/peerbench, about 3 GB);
# PEERBENCH_ROWS and PEERBENCH_EVENTS (default 2000000 and 1000000) make a
# smaller data set for a quick check (give it its own PEERBENCH_DATA).
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
export PEERBENCH_DATA="${PEERBENCH_DATA:-$ROOT/.cache/peerbench}"
bench/peers/install.sh
make --no-print-directory build testdata
mkdir -p "$PEERBENCH_DATA/bin"
go build -trimpath -o "$PEERBENCH_DATA/bin/" ./bench/peers/cmd/...
cp bin/lut bin/enrichd "$PEERBENCH_DATA/bin/"
go run -trimpath ./bench/peers/prepare --data "$PEERBENCH_DATA" --lut "$PEERBENCH_DATA/bin/lut" \
  --rows "${PEERBENCH_ROWS:-2000000}" --events "${PEERBENCH_EVENTS:-1000000}"
exec python3 bench/peers/bench.py "$@"
