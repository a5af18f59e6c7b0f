package reader_test

import (
	"os"
	"runtime"
	"strconv"
	"testing"

	"github.com/lutkit/lutkit/reader"
)

// BenchmarkScale looks up a large table built outside the test, such as
// the 100M-row table of BENCHMARKS.md ("Scale"):
//
//	LUTKIT_BENCH_TABLE=/tmp/big/c100m.lut go test -run '^$' -bench Scale ./reader/
//
// LUTKIT_BENCH_TABLE names it, and its keys must be the integers 1 to its
// row count (as `seq` makes them). Without it the benchmark is skipped:
// the table is gigabytes. On the same mapping it measures
//
//   - chase: one random read of the mapped file whose offset depends on
//     the byte the previous read returned: the latency of one miss, the
//     physical limit two dependent reads (a slot, then its record) meet;
//   - chase3: three such reads, one after the other: the latency of the
//     three dependent reads a lookup makes in a perfect hash (pilot,
//     slot, record); in a bucketed index (format 1.3, the compiler's for
//     100M rows) a lookup makes two, both buckets at once, then the record;
//   - get: Get of a key chosen from the previous row's bytes, so that no
//     two lookups overlap: the latency of one lookup, to set against two
//     chases and against chase3;
//   - get-independent: Get of keys from a shuffled list, which the
//     processor may overlap;
//   - batch: LookupBatch of 32 keys from such a list at a time, as
//     enrichd looks its events' keys up (ns/key is per key).
func BenchmarkScale(b *testing.B) {
	path := os.Getenv("LUTKIT_BENCH_TABLE")
	if path == "" {
		b.Skip("LUTKIT_BENCH_TABLE names no table")
	}
	t, err := reader.OpenWith(path, reader.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer t.Close()
	n := uint64(t.Rows())
	file := t.Bytes()
	// Touch every page once, as a node that has run a while has, so that
	// first-touch page faults are not timed.
	var sink byte
	for off := 0; off < len(file); off += 4096 {
		sink ^= file[off]
	}
	b.Run("chase", func(b *testing.B) {
		size := uint64(len(file))
		x := uint64(0x9e3779b97f4a7c15)
		for b.Loop() {
			x = mix(x ^ uint64(file[x%size]))
		}
		sink ^= byte(x)
	})
	b.Run("chase3", func(b *testing.B) {
		size := uint64(len(file))
		x := uint64(0x9e3779b97f4a7c15)
		for b.Loop() {
			x = mix(x ^ uint64(file[x%size]))
			x = mix(x ^ uint64(file[x%size]))
			x = mix(x ^ uint64(file[x%size]))
		}
		sink ^= byte(x)
	})
	var row reader.Row
	var key [20]byte
	b.Run("get", func(b *testing.B) {
		x := uint64(0x9e3779b97f4a7c15)
		for b.Loop() {
			k := strconv.AppendUint(key[:0], x%n+1, 10)
			if !t.Get(k, &row) {
				b.Fatalf("key %s missing", k)
			}
			r := row.Col(0)
			x = mix(x ^ uint64(r[len(r)-1]))
		}
	})
	b.Run("get-independent", func(b *testing.B) {
		keys := make([][]byte, 1<<20)
		x := uint64(0x9e3779b97f4a7c15)
		for i := range keys {
			x = mix(x)
			keys[i] = strconv.AppendUint(nil, x%n+1, 10)
		}
		i := 0
		b.ResetTimer()
		for b.Loop() {
			if !t.Get(keys[i], &row) {
				b.Fatalf("key %s missing", keys[i])
			}
			i = (i + 1) & (len(keys) - 1)
		}
	})
	b.Run("batch", func(b *testing.B) {
		keys := make([][]byte, 1<<20)
		x := uint64(0x2545f4914f6cdd1d)
		for i := range keys {
			x = mix(x)
			keys[i] = strconv.AppendUint(nil, x%n+1, 10)
		}
		out := make([]reader.View, 32)
		i := 0
		b.ResetTimer()
		for b.Loop() {
			if got := t.LookupBatch(keys[i:i+32], out); got != 32 {
				b.Fatalf("LookupBatch found %d of 32 keys", got)
			}
			i = (i + 32) & (len(keys) - 1)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(32*b.N), "ns/key")
	})
	runtime.KeepAlive(sink)
}

// mix is splitmix64's finalizer: a fresh random offset from the last.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}
