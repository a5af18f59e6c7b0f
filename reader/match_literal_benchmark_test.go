package reader_test

import (
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/lutkit/lutkit/compile"
	"github.com/lutkit/lutkit/reader"
)

// literalBenchRows is the size of the wildcard and pattern benchmark
// tables: 10,000 rows. LUTKIT_BENCH_PATTERNS overrides it.
func literalBenchRows() int { return envInt("LUTKIT_BENCH_PATTERNS", 10_000) }

// label36 is a short label of i, distinct per i.
func label36(i int) string { return strconv.FormatUint(uint64(i)*2654435761%(1<<36), 36) }

// benchPattern returns pattern i of the pattern benchmark, and a text it
// matches: URL routes, user agents, host names, product codes, as the
// lists of a Logstash translate regex or a Cribl lookup hold them; one
// in 500 has no literal at all (always checked).
func benchPattern(i int) (pattern, text string) {
	l := label36(i)
	if i%500 == 499 {
		d, e := 12+i/500%20, 1+i/10000
		return fmt.Sprintf(`^\d{%d}[a-f]{%d}$`, d, e), strings.Repeat("7", d) + strings.Repeat("a", e)
	}
	switch i % 6 {
	case 0:
		return fmt.Sprintf(`^/api/v%d/%s/\d+$`, i%9, l), fmt.Sprintf("/api/v%d/%s/%d", i%9, l, i)
	case 1:
		return fmt.Sprintf(`(?i)%sbot/\d`, l), fmt.Sprintf("Mozilla/5.0 (compatible; %sBot/2.1)", strings.ToUpper(l))
	case 2:
		return fmt.Sprintf(`product-%s-(red|blue|green)\b`, l), fmt.Sprintf("GET /shop/product-%s-blue?x=1", l)
	case 3:
		return fmt.Sprintf(`\.%s\.example\.com$`, l), fmt.Sprintf("cdn.%s.example.com", l)
	case 4:
		return fmt.Sprintf(`^Mozilla/5\.0 .*%sBrowser/\d+`, l), fmt.Sprintf("Mozilla/5.0 (X11; Linux) %sBrowser/12", l)
	}
	return fmt.Sprintf(`(?:^|/)%s-(\d+)\.(\d+)`, l), fmt.Sprintf("/dl/%s-3.14", l)
}

// benchGlob returns glob i of the wildcard benchmark, and a key it
// matches: host groups, network prefixes, exact hosts.
func benchGlob(i int) (glob, key string) {
	l := label36(i)
	switch i % 5 {
	case 0:
		return "web-" + l + "-*", "web-" + l + "-01"
	case 1:
		return "*." + l + ".corp.example.com", "mail." + l + ".corp.example.com"
	case 2:
		return "*-" + l + "-db-*", "eu-" + l + "-db-3"
	case 3:
		return fmt.Sprintf("10.%d.%d.*", i/256%256, i%256), fmt.Sprintf("10.%d.%d.77", i/256%256, i%256)
	}
	return l + ".example.net", l + ".example.net"
}

// literalSource generates the rows of a benchmark table: key, id.
type literalSource struct {
	n, i int
	key  func(i int) (string, string)
}

func (s *literalSource) Columns() []string { return []string{"key", "id"} }
func (s *literalSource) Line() int64       { return int64(s.i) + 1 }
func (s *literalSource) Close() error      { return nil }
func (s *literalSource) Next() ([][]byte, error) {
	if s.i >= s.n {
		return nil, io.EOF
	}
	k, _ := s.key(s.i)
	s.i++
	return [][]byte{[]byte(k), []byte(strconv.Itoa(s.i - 1))}, nil
}

var (
	literalBenchOnce sync.Once
	literalBenchErr  error
	literalBenchPath [2]string // wildcard, pattern
)

// literalBenchTables compiles (once, cached in the temp directory) the
// wildcard and the pattern benchmark tables.
func literalBenchTables(b *testing.B) (wildcard, pattern string) {
	literalBenchOnce.Do(func() {
		n := literalBenchRows()
		for i, m := range []string{"wildcard", "pattern"} {
			p := filepath.Join(os.TempDir(), "lutkit-bench-"+m+"-"+strconv.Itoa(n)+"-v2.lut")
			literalBenchPath[i] = p
			if _, err := os.Stat(p); err == nil {
				continue
			}
			key := benchGlob
			if m == "pattern" {
				key = benchPattern
			}
			if _, err := compile.File(&literalSource{n: n, key: key}, p, compile.Options{Key: []string{"key"}, Match: m}); err != nil {
				literalBenchErr = err
				return
			}
		}
	})
	if literalBenchErr != nil {
		b.Fatal(literalBenchErr)
	}
	return literalBenchPath[0], literalBenchPath[1]
}

func openBench(b *testing.B, p string) *reader.Table {
	t, err := reader.OpenWith(p, reader.Options{Verify: true, Prefetch: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { t.Close() })
	return t
}

// benchKeys returns count keys of the benchmark, each matching a random
// row (hits) or none (misses: paths and agents of no listed row).
func benchKeys(n int, key func(int) (string, string)) (hits, misses [][]byte) {
	r := rand.New(rand.NewPCG(4, 4))
	for range 4096 {
		_, k := key(r.IntN(n))
		hits = append(hits, []byte(k))
		misses = append(misses, fmt.Appendf(nil, "/static/img/n%d.png?v=%d Mozilla/5.0 (Windows NT 10.0) Safari/537.36", r.IntN(1<<30), r.IntN(100)))
	}
	return hits, misses
}

// BenchmarkPatternSet looks user agents, URLs and names up in a table of
// 10,000 patterns: the first matching pattern of each (hit), or none
// (miss). BenchmarkPatternNaive is the same lookup as a loop of
// regexp.Match over the patterns, compiled beforehand, in source order.
func BenchmarkPatternSet(b *testing.B) {
	_, p := literalBenchTables(b)
	t := openBench(b, p)
	hits, misses := benchKeys(t.Rows(), benchPattern)
	// Warm up: the patterns these keys check are compiled once, at their
	// first use, and the timed lookups find them compiled.
	for _, k := range append(hits, misses...) {
		t.Lookup(k)
	}
	b.Run("hit", func(b *testing.B) { lookupLoopHit(b, t, hits) })
	b.Run("miss", func(b *testing.B) { missLoop(b, t, misses) })
}

func BenchmarkPatternNaive(b *testing.B) {
	n := literalBenchRows()
	res := make([]*regexp.Regexp, n)
	for i := range res {
		p, _ := benchPattern(i)
		res[i] = regexp.MustCompile(p)
	}
	hits, misses := benchKeys(n, benchPattern)
	loop := func(b *testing.B, keys [][]byte, want bool) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			found := false
			for _, re := range res {
				if re.Match(keys[i]) {
					found = true
					break
				}
			}
			if found != want {
				b.Fatalf("%q: found %v", keys[i], found)
			}
			if i++; i == len(keys) {
				i = 0
			}
		}
	}
	b.Run("hit", func(b *testing.B) { loop(b, hits, true) })
	b.Run("miss", func(b *testing.B) { loop(b, misses, false) })
}

// BenchmarkWildcardSet looks host names and addresses up in a table of
// 10,000 globs: the most specific match of each (hit), or none (miss).
// BenchmarkWildcardNaive is the same lookup as a loop of path.Match over
// every glob, keeping the most specific.
func BenchmarkWildcardSet(b *testing.B) {
	w, _ := literalBenchTables(b)
	t := openBench(b, w)
	hits, misses := benchKeys(t.Rows(), benchGlob)
	b.Run("hit", func(b *testing.B) { lookupLoopHit(b, t, hits) })
	b.Run("miss", func(b *testing.B) { missLoop(b, t, misses) })
}

func BenchmarkWildcardNaive(b *testing.B) {
	n := literalBenchRows()
	globs := make([]string, n)
	lits := make([]int, n)
	for i := range globs {
		globs[i], _ = benchGlob(i)
		lits[i] = len(globs[i]) - strings.Count(globs[i], "*")
	}
	hits, misses := benchKeys(n, benchGlob)
	loop := func(b *testing.B, keys [][]byte, want bool) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			best := -1
			k := string(keys[i])
			for j, g := range globs {
				if ok, _ := path.Match(g, k); ok && (best < 0 || lits[j] > lits[best]) {
					best = j
				}
			}
			if (best >= 0) != want {
				b.Fatalf("%q: found %v", keys[i], best >= 0)
			}
			if i++; i == len(keys) {
				i = 0
			}
		}
	}
	b.Run("hit", func(b *testing.B) { loop(b, hits, true) })
	b.Run("miss", func(b *testing.B) { loop(b, misses, false) })
}

// BenchmarkLiteralCompile times lut's compile of 100,000 patterns and of
// 100,000 globs (LUTKIT_BENCH_COMPILE overrides the count), each
// validated and indexed, to a file; run it with -benchtime 1x.
func BenchmarkLiteralCompile(b *testing.B) {
	n := envInt("LUTKIT_BENCH_COMPILE", 100_000)
	for _, m := range []string{"pattern", "wildcard"} {
		key := benchGlob
		if m == "pattern" {
			key = benchPattern
		}
		b.Run(m, func(b *testing.B) {
			p := filepath.Join(b.TempDir(), "t.lut")
			for b.Loop() {
				if _, err := compile.File(&literalSource{n: n, key: key}, p, compile.Options{Key: []string{"key"}, Match: m}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n), "rows")
		})
	}
}

// BenchmarkPatternHeap measures the heap a pattern table takes for each
// pattern a lookup has compiled (the cached *regexp.Regexp), over the
// benchmark's 10,000 patterns: run it with -benchtime 1x.
func BenchmarkPatternHeap(b *testing.B) {
	_, p := literalBenchTables(b)
	for b.Loop() {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		t, err := reader.Open(p)
		if err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		var opened runtime.MemStats
		runtime.ReadMemStats(&opened)
		// One key per pattern: every pattern is checked, and compiled.
		for i := range t.Rows() {
			_, k := benchPattern(i)
			if _, ok := t.Lookup([]byte(k)); !ok {
				b.Fatalf("%q: miss", k)
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(opened.HeapAlloc-before.HeapAlloc)/float64(t.Rows()), "open-B/pattern")
		b.ReportMetric(float64(after.HeapAlloc-opened.HeapAlloc)/float64(t.Rows()), "compiled-B/pattern")
		runtime.KeepAlive(t)
		t.Close()
	}
}
