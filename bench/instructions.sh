#!/bin/sh
# Instructions per op of a Go benchmark, counted by valgrind's callgrind:
# repeatable on a loaded machine, where time is not. The benchmark runs
# twice, N1 and N2 ops, in one goroutine without garbage collection; the
# difference of the two totals over N2-N1 leaves out the setup, which
# runs the same instructions both times. Compare builds by this count
# (cache misses are not in it: memory-bound code needs a quiet machine).
#   go test -c -o /tmp/engine.test ./enrichd/engine/
#   cd enrichd/engine && ../../bench/instructions.sh /tmp/engine.test BenchmarkPipeline/cycle8k 2000 62000
# With --cache first, cachegrind also simulates the caches of the
# project's machine type (32 KiB 8-way L1 data and instruction caches, a
# 32 MiB 16-way last level, 64-byte lines; its own counters are not
# exposed to its guests: perf stat says <not supported>) and the data
# misses per op are printed too:
#   ../../bench/instructions.sh --cache /tmp/engine.test BenchmarkPipeline/uniform 2000 12000
# Extra arguments go to the test binary (the default is -test.short).
set -eu
cache=
if [ "${1:-}" = --cache ]; then
  cache=1
  shift
fi
if [ $# -lt 4 ]; then
  echo "usage: $0 [--cache] TEST-BINARY BENCHMARK N1 N2 [test flags]" >&2
  exit 2
fi
bin=$1 bench=$2 n1=$3 n2=$4
shift 4
[ $# -gt 0 ] || set -- -test.short
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# count N: prints the instructions of N ops, and with --cache their L1
# and last-level data misses.
count() {
  n=$1
  shift
  if [ -n "$cache" ]; then
    tool="--tool=cachegrind --cache-sim=yes --cachegrind-out-file=/dev/null --I1=32768,8,64 --D1=32768,8,64 --LL=33554432,16,64"
  else
    tool="--tool=callgrind --callgrind-out-file=$tmp/out.$n"
  fi
  # valgrind 3.19 does not know RDTSCP, which the Go runtime uses when
  # the CPU has it: cpu.rdtscp=off makes it use RDTSC.
  # shellcheck disable=SC2086 # $tool is a list of options
  GOGC=off GOMAXPROCS=1 GODEBUG=asyncpreemptoff=1,cpu.rdtscp=off \
    valgrind $tool "$bin" -test.run '^$' -test.bench "$bench" -test.benchtime "${n}x" "$@" >"$tmp/log.$n" 2>&1 ||
    { cat "$tmp/log.$n" >&2; exit 1; }
  if [ -n "$cache" ]; then
    num() { sed -n "s/.*$1 *\([0-9,]*\).*/\1/p" "$tmp/log.$n" | head -1 | tr -d ,; }
    echo "$(num 'I *refs:') $(num 'D1  misses:') $(num 'LLd misses:')"
  else
    sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$tmp/log.$n"
  fi
}
set -- $(count "$n1" "$@") $(count "$n2" "$@")
d=$((n2 - n1))
if [ -n "$cache" ]; then
  echo "$bench: $(( ($4 - $1) / d )) instructions, $(( ($5 - $2) / d )) L1 data misses, $(( ($6 - $3) / d )) last-level data misses per op"
else
  echo "$bench: $(( ($2 - $1) / d )) instructions per op ($1 for $n1 ops, $2 for $n2)"
fi
