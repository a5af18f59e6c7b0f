#!/bin/sh
# Instructions per op of a Go benchmark, counted by valgrind's callgrind:
# repeatable on a loaded machine, where time is not. The benchmark runs
# twice, N1 and N2 ops, in one goroutine without garbage collection; the
# difference of the two totals over N2-N1 leaves out the setup, which
# runs the same instructions both times. Compare builds by this count
# (cache misses are not in it: memory-bound code needs a quiet machine).
#   go test -c -o /tmp/engine.test ./enrichd/engine/
#   cd enrichd/engine && ../../bench/instructions.sh /tmp/engine.test BenchmarkPipeline/cycle8k 2000 62000
# Extra arguments go to the test binary (the default is -test.short).
set -eu
if [ $# -lt 4 ]; then
  echo "usage: $0 TEST-BINARY BENCHMARK N1 N2 [test flags]" >&2
  exit 2
fi
bin=$1 bench=$2 n1=$3 n2=$4
shift 4
[ $# -gt 0 ] || set -- -test.short
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
count() {
  n=$1
  shift
  # valgrind 3.19 does not know RDTSCP, which the Go runtime uses when
  # the CPU has it: cpu.rdtscp=off makes it use RDTSC.
  GOGC=off GOMAXPROCS=1 GODEBUG=asyncpreemptoff=1,cpu.rdtscp=off \
    valgrind --tool=callgrind --callgrind-out-file="$tmp/out.$n" \
    "$bin" -test.run '^$' -test.bench "$bench" -test.benchtime "${n}x" "$@" >"$tmp/log.$n" 2>&1 ||
    { cat "$tmp/log.$n" >&2; exit 1; }
  sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$tmp/log.$n"
}
a=$(count "$n1" "$@")
b=$(count "$n2" "$@")
echo "$bench: $(( (b - a) / (n2 - n1) )) instructions per op ($a for $n1 ops, $b for $n2)"
