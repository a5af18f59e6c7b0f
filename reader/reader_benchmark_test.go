package reader_test

import (
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"testing"

	"github.com/lutkit/lutkit/compile"
	"github.com/lutkit/lutkit/reader"
)

// benchRows is the size of the benchmark table: the 2M-row customers
// table of the issue. LUTKIT_BENCH_ROWS overrides it.
func benchRows() int { return envInt("LUTKIT_BENCH_ROWS", 2_000_000) }

// envInt returns the number in the environment variable name, or def.
func envInt(name string, def int) int {
	if s := os.Getenv(name); s != "" {
		if n, err := strconv.Atoi(s); err == nil {
			return n
		}
	}
	return def
}

var (
	benchOnce  sync.Once
	benchPath  string
	benchError error
)

// benchTable compiles (once per process, cached in the temp directory
// across runs) a customers-like table of benchRows rows.
func benchTable(b *testing.B) string {
	benchOnce.Do(func() {
		n := benchRows()
		// The name says which compiler wrote it: a table of 4,194,304
		// rows or more has a partitioned perfect hash (format 1.2).
		benchPath = filepath.Join(os.TempDir(), "lutkit-bench-"+strconv.Itoa(n)+"-v1.2.lut")
		if _, err := os.Stat(benchPath); err == nil {
			return
		}
		_, benchError = compile.File(newGenSource(n, 42), benchPath, compile.Options{Key: []string{"Index"}})
	})
	if benchError != nil {
		b.Fatal(benchError)
	}
	return benchPath
}

// randomKeys returns count keys drawn uniformly from 1..n (hits) or from
// n+1..2n (misses).
func randomKeys(n, count int, miss bool) [][]byte {
	r := rand.New(rand.NewPCG(7, 7))
	keys := make([][]byte, count)
	for i := range keys {
		k := 1 + r.IntN(n)
		if miss {
			k += n
		}
		keys[i] = []byte(strconv.Itoa(k))
	}
	return keys
}

// The key sets of BenchmarkGet: hot is 65,536 distinct-ish keys drawn once
// and looked up over and over (the records they touch fit in a large last
// level cache); uniform is as many keys as the table has rows, drawn
// uniformly over all of them, so that almost every lookup reads memory no
// earlier lookup brought into cache: the access pattern of a daemon
// enriching a stream of events whose keys are spread over the whole table.
const hotKeys = 1 << 16

// BenchmarkGet measures lookups of random keys in a 2M-row table, for two
// key sets (hot and uniform, see hotKeys): Get (copy), Lookup (zero-copy),
// misses, LookupBatch (ns per key), and a Go map[string][]string built
// from the same rows, in the same run. Every loop reads the length of the
// Email column of the row it finds.
func BenchmarkGet(b *testing.B) {
	path := benchTable(b)
	t, err := reader.OpenWith(path, reader.Options{Prefetch: true})
	if err != nil {
		b.Fatal(err)
	}
	defer t.Close()
	// Read the whole file once (Verify does), so that page faults of the
	// first touch are not measured as lookups.
	if err := t.Verify(); err != nil {
		b.Fatal(err)
	}
	n := t.Rows()
	email := t.ColumnIndex("Email")
	var m map[string][]string // built on first use, shared by both key sets
	sets := []struct {
		name         string
		hits, misses [][]byte
	}{
		{"hot", randomKeys(n, hotKeys, false), randomKeys(n, hotKeys, true)},
		{"uniform", randomKeys(n, max(n, hotKeys), false), randomKeys(n, max(n, hotKeys), true)},
	}
	for _, ks := range sets {
		b.Run(ks.name, func(b *testing.B) {
			b.Run("get", func(b *testing.B) { getLoop(b, t, ks.hits, email) })
			b.Run("lookup", func(b *testing.B) { lookupLoop(b, t, ks.hits, email) })
			b.Run("miss", func(b *testing.B) { missLoop(b, t, ks.misses) })
			b.Run("batch", func(b *testing.B) { batchLoop(b, t, ks.hits, email) })
			b.Run("gomap", func(b *testing.B) {
				if m == nil {
					m = loadMap(b, t)
				}
				b.ResetTimer()
				mapLoop(b, m, ks.hits, email)
			})
		})
	}
}

// The loops of BenchmarkGet are functions of their own, not closures, so
// that a profiler or cache simulator can be told to count only them.

//go:noinline
func getLoop(b *testing.B, t *reader.Table, keys [][]byte, col int) {
	var row reader.Row
	b.ReportAllocs()
	i, sink := 0, 0
	for b.Loop() {
		if !t.Get(keys[i], &row) {
			b.Fatal("miss")
		}
		sink += len(row.Col(col))
		if i++; i == len(keys) {
			i = 0
		}
	}
	runtime.KeepAlive(sink)
}

//go:noinline
func lookupLoop(b *testing.B, t *reader.Table, keys [][]byte, col int) {
	b.ReportAllocs()
	i, sink := 0, 0
	for b.Loop() {
		v, _ := t.Lookup(keys[i])
		sink += len(v.Col(col))
		if i++; i == len(keys) {
			i = 0
		}
	}
	runtime.KeepAlive(sink)
}

//go:noinline
func missLoop(b *testing.B, t *reader.Table, keys [][]byte) {
	var row reader.Row
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if t.Get(keys[i], &row) {
			b.Fatal("hit")
		}
		if i++; i == len(keys) {
			i = 0
		}
	}
}

//go:noinline
func batchLoop(b *testing.B, t *reader.Table, keys [][]byte, col int) {
	const batch = 256
	out := make([]reader.View, batch)
	keys = keys[:len(keys)/batch*batch]
	b.ReportAllocs()
	i, sink := 0, 0
	for b.Loop() {
		if t.LookupBatch(keys[i:i+batch], out) != batch {
			b.Fatal("miss in batch")
		}
		for _, v := range out {
			sink += len(v.Col(col))
		}
		if i += batch; i == len(keys) {
			i = 0
		}
	}
	runtime.KeepAlive(sink)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch), "ns/key")
}

//go:noinline
func mapLoop(b *testing.B, m map[string][]string, keys [][]byte, col int) {
	b.ReportAllocs()
	i, sink := 0, 0
	for b.Loop() {
		row, ok := m[string(keys[i])]
		if !ok {
			b.Fatal("miss")
		}
		sink += len(row[col])
		if i++; i == len(keys) {
			i = 0
		}
	}
	runtime.KeepAlive(sink)
}

// loadMap builds the map[string][]string a naive enricher would hold.
func loadMap(b *testing.B, t *reader.Table) map[string][]string {
	m := make(map[string][]string, t.Rows())
	err := t.Records(func(v reader.View) bool {
		row := make([]string, v.Len())
		for i := range row {
			row[i] = string(v.Col(i))
		}
		m[string(v.Key())] = row
		return true
	})
	if err != nil {
		b.Fatal(err)
	}
	return m
}

// BenchmarkOpen measures Open (map + header, section table, schema and
// MPHF checks) of the 2M-row table, and reports the Go heap it costs.
func BenchmarkOpen(b *testing.B) {
	path := benchTable(b)
	b.ReportAllocs()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var keep *reader.Table
	for b.Loop() {
		t, err := reader.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		if keep != nil {
			keep.Close()
		}
		keep = t
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/1024, "heap-KiB")
	keep.Close()
}

var _ = io.EOF
