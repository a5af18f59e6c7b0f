package reader_test

import (
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/lutkit/lutkit/compile"
	"github.com/lutkit/lutkit/reader"
)

// suffixBenchRows is the size of the suffix benchmark table: an IoC
// domain list of 1M names. LUTKIT_BENCH_SUFFIXES overrides it.
func suffixBenchRows() int { return envInt("LUTKIT_BENCH_SUFFIXES", 1_000_000) }

// suffixSource generates n distinct domain names, row i being
// "<label>.<tld>" (three in four) or "<label>.<label>.<tld>", with the
// labels derived from i, and a threat column.
type suffixSource struct {
	n, i   int
	fields [][]byte
}

var benchTLDs = []string{"com", "net", "org", "io", "ru", "cn", "info", "xyz"}

// suffixName returns the name of row i.
func suffixName(i int) string {
	r := rand.New(rand.NewPCG(uint64(i), 5))
	label := strconv.FormatUint(uint64(i)*2654435761%(1<<40), 36) // distinct per i
	tld := benchTLDs[r.IntN(len(benchTLDs))]
	if i%4 == 3 {
		return "s" + strconv.Itoa(r.IntN(100)) + "." + label + "." + tld
	}
	return label + "." + tld
}

func (s *suffixSource) Columns() []string { return []string{"domain", "threat"} }
func (s *suffixSource) Line() int64       { return int64(s.i) + 1 }
func (s *suffixSource) Close() error      { return nil }
func (s *suffixSource) Next() ([][]byte, error) {
	if s.i >= s.n {
		return nil, io.EOF
	}
	s.fields = [][]byte{[]byte(suffixName(s.i)), []byte("malware-" + strconv.Itoa(s.i%50))}
	s.i++
	return s.fields, nil
}

var (
	suffixBenchOnce sync.Once
	suffixBenchErr  error
	suffixBenchPath [2]string // exact, suffix
)

// suffixBenchTables compiles (once, cached in the temp directory) the
// suffix benchmark's names as an exact table and as a suffix table.
func suffixBenchTables(b *testing.B) (exact, suffix string) {
	suffixBenchOnce.Do(func() {
		n := suffixBenchRows()
		for i, m := range []string{"exact", "suffix"} {
			p := filepath.Join(os.TempDir(), "lutkit-bench-"+m+"-"+strconv.Itoa(n)+"-v1.lut")
			suffixBenchPath[i] = p
			if _, err := os.Stat(p); err == nil {
				continue
			}
			if _, err := compile.File(&suffixSource{n: n}, p, compile.Options{Key: []string{"domain"}, Match: m}); err != nil {
				suffixBenchErr = err
				return
			}
		}
	})
	if suffixBenchErr != nil {
		b.Fatal(suffixBenchErr)
	}
	return suffixBenchPath[0], suffixBenchPath[1]
}

// BenchmarkSuffix compares, on 1M names and in one run: an exact lookup
// of a name in the exact table; suffix lookups in the suffix table of a
// name one or two labels below a listed one (hit) and of a name below no
// listed one (miss); and the naive alternative, a Go map of the names
// walked label by label, on the same hit keys.
func BenchmarkSuffix(b *testing.B) {
	exactPath, suffixPath := suffixBenchTables(b)
	open := func(p string) *reader.Table {
		t, err := reader.OpenWith(p, reader.Options{Verify: true, Prefetch: true})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { t.Close() })
		return t
	}
	et, st := open(exactPath), open(suffixPath)
	n := st.Rows()
	r := rand.New(rand.NewPCG(9, 9))
	const count = 1 << 16
	var names, hits, misses [][]byte
	for range count {
		name := suffixName(r.IntN(n))
		names = append(names, []byte(name))
		sub := []string{"www.", "a.b.", "login.", "cdn.x."}[r.IntN(4)]
		hits = append(hits, []byte(sub+name))
		misses = append(misses, []byte(sub+"not-listed-"+strconv.Itoa(r.IntN(1<<30))+".com"))
	}
	b.Run("exact", func(b *testing.B) { lookupLoopHit(b, et, names) })
	b.Run("suffix-exact-name", func(b *testing.B) { lookupLoopHit(b, st, names) })
	b.Run("suffix-hit", func(b *testing.B) { lookupLoopHit(b, st, hits) })
	b.Run("suffix-miss", func(b *testing.B) { missLoop(b, st, misses) })
	b.Run("gomap-walk", func(b *testing.B) {
		m := make(map[string]string, n)
		if err := st.Records(func(v reader.View) bool { m[string(v.Key())] = string(v.Col(1)); return true }); err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		mapWalkLoop(b, m, hits)
	})
}

//go:noinline
func lookupLoopHit(b *testing.B, t *reader.Table, keys [][]byte) {
	b.ReportAllocs()
	i, sink := 0, 0
	for b.Loop() {
		v, ok := t.Lookup(keys[i])
		if !ok {
			b.Fatalf("%q: miss", keys[i])
		}
		sink += len(v.Col(1))
		if i++; i == len(keys) {
			i = 0
		}
	}
	runtime.KeepAlive(sink)
}

// mapWalkLoop is the naive suffix lookup: lower-case the name, then try
// it and each of its suffixes in a Go map.
//
//go:noinline
func mapWalkLoop(b *testing.B, m map[string]string, keys [][]byte) {
	b.ReportAllocs()
	i, sink := 0, 0
	for b.Loop() {
		q := strings.ToLower(string(keys[i]))
		for {
			if v, ok := m[q]; ok {
				sink += len(v)
				break
			}
			j := strings.IndexByte(q, '.')
			if j < 0 {
				b.Fatal("miss")
			}
			q = q[j+1:]
		}
		if i++; i == len(keys) {
			i = 0
		}
	}
	runtime.KeepAlive(sink)
}
