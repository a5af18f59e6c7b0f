package reader_test

import (
	"io"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/lutkit/lutkit/compile"
	"github.com/lutkit/lutkit/reader"
)

// suffixTimeBenchNames is the number of names of BenchmarkSuffixTime,
// each listed 4 times in turn. LUTKIT_BENCH_SUFFIX_TIME overrides it.
func suffixTimeBenchNames() int { return envInt("LUTKIT_BENCH_SUFFIX_TIME", 250_000) }

// suffixTimeSource yields 4 rows per name of suffixName: the name listed
// for [1000k, 1000(k+1)), each validity ending when the next starts, and
// a threat column.
type suffixTimeSource struct {
	n, i int
	row  [4][]byte
}

func (s *suffixTimeSource) Columns() []string { return []string{"domain", "start", "end", "threat"} }
func (s *suffixTimeSource) Line() int64       { return int64(s.i) + 1 }
func (s *suffixTimeSource) Close() error      { return nil }
func (s *suffixTimeSource) Next() ([][]byte, error) {
	if s.i >= 4*s.n {
		return nil, io.EOF
	}
	j, k := s.i/4, int64(s.i%4)
	s.row = [4][]byte{[]byte(suffixName(j)), strconv.AppendInt(nil, 1000*k, 10), strconv.AppendInt(nil, 1000*(k+1), 10),
		[]byte("malware-" + strconv.Itoa(s.i%50))}
	s.i++
	return s.row[:], nil
}

// validRow is a row of the naive alternative: a validity and a value.
type validRow struct {
	lo, hi int64 // [lo, hi)
	threat string
}

// BenchmarkSuffixTime measures, in one run, suffix lookups at a time in a
// suffix table bounded in time (suffixTimeBenchNames() names, each with 4
// validities in turn), one or two labels below a listed name (hit) and
// below none (miss), beside a suffix lookup of the same hit keys in a
// suffix table of the same names without time, and the naive
// alternative: a Go map of each name's rows walked label by label, its
// validities scanned. Every loop reads the threat's length.
func BenchmarkSuffixTime(b *testing.B) {
	n := suffixTimeBenchNames()
	dir := b.TempDir()
	stPath, sPath := filepath.Join(dir, "st.lut"), filepath.Join(dir, "s.lut")
	if _, err := compile.File(&suffixTimeSource{n: n}, stPath, compile.Options{Key: []string{"domain"}, Match: compile.MatchSuffix,
		ValidFrom: "start", ValidTo: "end"}); err != nil {
		b.Fatal(err)
	}
	if _, err := compile.File(&suffixSource{n: n}, sPath, compile.Options{Key: []string{"domain"}, Match: compile.MatchSuffix}); err != nil {
		b.Fatal(err)
	}
	open := func(p string) *reader.Table {
		t, err := reader.OpenWith(p, reader.Options{Verify: true, Prefetch: true})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { t.Close() })
		return t
	}
	st, s := open(stPath), open(sPath)
	r := rand.New(rand.NewPCG(9, 11))
	const count = 1 << 16
	var hits, misses [][]byte
	var ats []int64
	for range count {
		sub := []string{"www.", "a.b.", "login.", "cdn.x."}[r.IntN(4)]
		hits = append(hits, []byte(sub+suffixName(r.IntN(n))))
		misses = append(misses, []byte(sub+"not-listed-"+strconv.Itoa(r.IntN(1<<30))+".com"))
		ats = append(ats, r.Int64N(4000))
	}
	b.Run("suffix", func(b *testing.B) { lookupLoopHit(b, s, hits) })
	b.Run("suffix-time-hit", func(b *testing.B) { lookupAtLoop(b, st, hits, ats, true) })
	b.Run("suffix-time-miss", func(b *testing.B) { lookupAtLoop(b, st, misses, ats, false) })
	b.Run("gomap-walk-time", func(b *testing.B) {
		m := make(map[string][]validRow, n)
		for i := range n {
			for k := range int64(4) {
				name := suffixName(i)
				m[name] = append(m[name], validRow{1000 * k, 1000 * (k + 1), "malware-" + strconv.Itoa((4*i+int(k))%50)})
			}
		}
		b.ResetTimer()
		mapWalkTimeLoop(b, m, hits, ats)
	})
}

//go:noinline
func lookupAtLoop(b *testing.B, t *reader.Table, keys [][]byte, ats []int64, hit bool) {
	b.ReportAllocs()
	i, sink := 0, 0
	for b.Loop() {
		v, ok := t.LookupAt(keys[i], ats[i])
		if ok != hit {
			b.Fatalf("%q at %d: found %v", keys[i], ats[i], ok)
		}
		sink += len(v.Col(3))
		if i++; i == len(keys) {
			i = 0
		}
	}
	runtime.KeepAlive(sink)
}

// mapWalkTimeLoop is the naive suffix lookup at a time: lower-case the
// name, then try it and each of its suffixes in a Go map, scanning the
// rows of a name found for one valid at the time.
//
//go:noinline
func mapWalkTimeLoop(b *testing.B, m map[string][]validRow, keys [][]byte, ats []int64) {
	b.ReportAllocs()
	i, sink := 0, 0
	for b.Loop() {
		q, at := strings.ToLower(string(keys[i])), ats[i]
		found := false
		for !found {
			for _, v := range m[q] {
				if v.lo <= at && at < v.hi {
					sink += len(v.threat)
					found = true
					break
				}
			}
			j := strings.IndexByte(q, '.')
			if j < 0 && !found {
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
