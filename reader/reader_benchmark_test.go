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
func benchRows() int {
	if s := os.Getenv("LUTKIT_BENCH_ROWS"); s != "" {
		if n, err := strconv.Atoi(s); err == nil {
			return n
		}
	}
	return 2_000_000
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
		benchPath = filepath.Join(os.TempDir(), "lutkit-bench-"+strconv.Itoa(n)+"-v1.lut")
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

// BenchmarkGet measures lookups of random keys in a 2M-row table: Get
// (copy), Lookup (zero-copy), misses, LookupBatch (ns per key), and a Go
// map[string][]string built from the same rows, in the same run.
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
	const nkeys = 1 << 16
	hits := randomKeys(n, nkeys, false)
	misses := randomKeys(n, nkeys, true)
	email := t.ColumnIndex("Email")

	b.Run("get", func(b *testing.B) {
		var row reader.Row
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if !t.Get(hits[i&(nkeys-1)], &row) {
				b.Fatal("miss")
			}
			i++
		}
	})
	b.Run("lookup", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		var sink int
		for b.Loop() {
			v, _ := t.Lookup(hits[i&(nkeys-1)])
			sink += len(v.Col(email))
			i++
		}
		runtime.KeepAlive(sink)
	})
	b.Run("miss", func(b *testing.B) {
		var row reader.Row
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if t.Get(misses[i&(nkeys-1)], &row) {
				b.Fatal("hit")
			}
			i++
		}
	})
	b.Run("batch", func(b *testing.B) {
		const batch = 256
		out := make([]reader.View, batch)
		b.ReportAllocs()
		i := 0
		var sink int
		for b.Loop() {
			ks := hits[i : i+batch]
			if t.LookupBatch(ks, out) != batch {
				b.Fatal("miss in batch")
			}
			for _, v := range out {
				sink += len(v.Col(email))
			}
			i = (i + batch) & (nkeys - 1)
		}
		runtime.KeepAlive(sink)
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch), "ns/key")
	})
	b.Run("gomap", func(b *testing.B) {
		m := loadMap(b, t)
		b.ReportAllocs()
		b.ResetTimer()
		i := 0
		var sink int
		for b.Loop() {
			row, ok := m[string(hits[i&(nkeys-1)])]
			if !ok {
				b.Fatal("miss")
			}
			sink += len(row[email])
			i++
		}
		runtime.KeepAlive(sink)
	})
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
