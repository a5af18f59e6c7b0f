#!/bin/sh
# Simulated cache misses per op of a Go benchmark, by valgrind's
# cachegrind, as instructions.sh counts instructions: the benchmark runs
# N1 and N2 ops in one goroutine without garbage collection, and the
# difference over N2-N1 leaves out the setup. The caches simulated are
# those of the project's machine type (32 KiB 8-way L1 data and
# instruction caches, a 32 MiB 16-way last level; 64-byte lines): the
# machine's own counters are not exposed to its guests (perf stat says
# <not supported>).
#   go test -c -o /tmp/engine.test ./enrichd/engine/
#   cd enrichd/engine && ../../bench/cachemisses.sh /tmp/engine.test BenchmarkPipeline/uniform 2000 22000
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
# run N: prints "instructions D1-misses LL-data-misses" of N ops.
run() {
  n=$1
  shift
  GOGC=off GOMAXPROCS=1 GODEBUG=asyncpreemptoff=1,cpu.rdtscp=off \
    valgrind --tool=cachegrind --cache-sim=yes --cachegrind-out-file=/dev/null \
    --I1=32768,8,64 --D1=32768,8,64 --LL=33554432,16,64 \
    "$bin" -test.run '^$' -test.bench "$bench" -test.benchtime "${n}x" "$@" >"$tmp/log.$n" 2>&1 ||
    { cat "$tmp/log.$n" >&2; exit 1; }
  num() { sed -n "s/.*$1 *\([0-9,]*\).*/\1/p" "$tmp/log.$n" | head -1 | tr -d ,; }
  echo "$(num 'I *refs:') $(num 'D1  misses:') $(num 'LLd misses:')"
}
set -- $(run "$n1" "$@") $(run "$n2" "$@")
d=$((n2 - n1))
echo "$bench: $(( ($4 - $1) / d )) instructions, $(( ($5 - $2) / d )) L1 data misses, $(( ($6 - $3) / d )) last-level data misses per op"
