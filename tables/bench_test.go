package tables

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/lutkit/lutkit/reader"
)

// benchRows is the size of the benchmark tables (LUTKIT_BENCH_ROWS
// overrides the 2M rows of the issue).
func benchRows() int {
	if s := os.Getenv("LUTKIT_BENCH_ROWS"); s != "" {
		if n, err := strconv.Atoi(s); err == nil {
			return n
		}
	}
	return 2_000_000
}

var benchFiles sync.Map // version -> path

// benchTable returns a table of benchRows rows of the given version,
// compiled once and cached in the temporary directory across runs.
func benchTable(b *testing.B, version int) string {
	n := benchRows()
	path := filepath.Join(os.TempDir(), fmt.Sprintf("lutkit-tables-bench-%d-v%d.lut", n, version))
	if _, ok := benchFiles.Load(path); ok {
		return path
	}
	if _, err := os.Stat(path); err != nil {
		compileVersion(b, path, n, version)
	}
	benchFiles.Store(path, true)
	return path
}

func benchKeys(n, count int) [][]byte {
	r := rand.New(rand.NewPCG(7, 7))
	keys := make([][]byte, count)
	for i := range keys {
		keys[i] = []byte(strconv.Itoa(r.IntN(n)))
	}
	return keys
}

// BenchmarkLookup compares a bare reader with lookups through the live
// set (acquire snapshot, get table, look up, release), in one run.
func BenchmarkLookup(b *testing.B) {
	path := benchTable(b, 1)
	dir := b.TempDir()
	if err := os.Link(path, filepath.Join(dir, "customers.lut")); err != nil {
		b.Fatal(err)
	}
	bare, err := reader.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer bare.Close()
	set, err := Open(dir, Options{NoWatch: true, DataVerify: DataVerifyNone})
	if err != nil {
		b.Fatal(err)
	}
	defer set.Close()
	keys := benchKeys(benchRows(), 1<<16)
	const mask = 1<<16 - 1
	h := set.Table("customers")
	var sink int
	b.Run("bare", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			v, _ := bare.Lookup(keys[i&mask])
			sink += v.Len()
		}
	})
	b.Run("set-by-name", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			snap := set.Acquire()
			v, _ := snap.LUT("customers").Lookup(keys[i&mask])
			sink += v.Len()
			snap.Release()
		}
	})
	b.Run("set-by-handle", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			snap := set.Acquire()
			v, _ := h.LUT(snap).Lookup(keys[i&mask])
			sink += v.Len()
			snap.Release()
		}
	})
	b.Run("local-by-handle", func(b *testing.B) {
		l := set.NewLocal()
		defer l.Close()
		for i := 0; b.Loop(); i++ {
			v, _ := h.LUT(l.Snapshot()).Lookup(keys[i&mask])
			sink += v.Len()
		}
	})
	// The overhead alone: acquire/release, and a Local's snapshot.
	b.Run("local-snapshot", func(b *testing.B) {
		l := set.NewLocal()
		defer l.Close()
		for b.Loop() {
			sink += h.LUT(l.Snapshot()).Rows()
		}
	})
	// How the daemon uses the set: one snapshot per batch of events, the
	// table resolved once per batch, then a batch lookup. The live-set
	// overhead per lookup is acquire + resolve + release divided by the
	// batch size ("overhead-batch64", in ns per lookup); "set-batch64"
	// runs it with the lookups, to compare with "batch64-bare".
	const batch = 64
	batchKeys := func(i int) [][]byte { return keys[(i*batch)&mask : (i*batch)&mask+batch] }
	out := make([]reader.View, batch)
	b.Run("batch64-bare", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			sink += bare.LookupBatch(batchKeys(i), out)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch), "ns/lookup")
	})
	b.Run("set-batch64", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			snap := set.Acquire()
			sink += h.LUT(snap).LookupBatch(batchKeys(i), out)
			snap.Release()
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch), "ns/lookup")
	})
	b.Run("overhead-batch64", func(b *testing.B) {
		for b.Loop() {
			snap := set.Acquire()
			sink += h.LUT(snap).Rows()
			snap.Release()
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch), "ns/lookup")
	})
	b.Run("acquire-release", func(b *testing.B) {
		for b.Loop() {
			set.Acquire().Release()
		}
	})
	b.Run("set-by-handle-parallel", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			i := rand.IntN(mask)
			for pb.Next() {
				snap := set.Acquire()
				v, _ := h.LUT(snap).Lookup(keys[i&mask])
				_ = v.Len()
				snap.Release()
				i++
			}
		})
	})
	b.Run("bare-parallel", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			i := rand.IntN(mask)
			for pb.Next() {
				v, _ := bare.Lookup(keys[i&mask])
				_ = v.Len()
				i++
			}
		})
	})
	runtime.KeepAlive(sink)
}

// BenchmarkPublish measures the time from a new 2M-row version appearing
// in a watched directory (its atomic rename) to its publish, with the
// structure check only (verify=none) and with the full-data check
// (verify=full: SHA256 and every checksum and key), reported separately.
func BenchmarkPublish(b *testing.B) {
	paths := []string{benchTable(b, 1), benchTable(b, 2)}
	for _, mode := range []struct {
		name   string
		verify DataVerify
	}{{"verify=none", DataVerifyNone}, {"verify=full", DataVerifyFull}} {
		b.Run(mode.name, func(b *testing.B) {
			dir := b.TempDir()
			if err := os.Link(paths[0], filepath.Join(dir, "customers.lut")); err != nil {
				b.Fatal(err)
			}
			log, _ := newTestLogger(b)
			set, err := Open(dir, Options{DataVerify: mode.verify, Logger: log, PollInterval: time.Minute})
			if err != nil {
				b.Fatal(err)
			}
			defer set.Close()
			if !set.Stats().Notify {
				b.Skip("no file notifications")
			}
			var lat []time.Duration
			i := 0
			for b.Loop() {
				i++
				tmp := filepath.Join(dir, fmt.Sprintf(".tmp-%d", i))
				if err := os.Link(paths[i%2], tmp); err != nil {
					b.Fatal(err)
				}
				gen := set.Generation()
				t0 := time.Now()
				if err := os.Rename(tmp, filepath.Join(dir, "customers.lut")); err != nil {
					b.Fatal(err)
				}
				for set.Generation() == gen {
					if time.Since(t0) > 5*time.Minute {
						b.Fatalf("not published: %+v", set.Stats())
					}
					runtime.Gosched()
				}
				lat = append(lat, time.Since(t0))
			}
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "ms-p50")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "ms-p99")
			st := set.Stats()
			if len(st.Tables) == 1 {
				b.ReportMetric(float64(st.Tables[0].OpenDuration.Microseconds())/1000, "ms-open")
				b.ReportMetric(float64(st.Tables[0].VerifyDuration.Microseconds())/1000, "ms-verify")
			}
		})
	}
}
