package reader_test

import (
	"bytes"
	"cmp"
	"fmt"
	"math/rand/v2"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/lutkit/lutkit/compile"
	"github.com/lutkit/lutkit/format"
	"github.com/lutkit/lutkit/reader"
)

// Suffix, wildcard and pattern tables bounded in time, against a scan:
// the keys that match in the kind's order, and of each the rows valid at
// the time, in the overlap policy's order (naiveMatch).

// timedRow is a source row of these tests: the key as the source writes
// it and its validity's bounds as text.
type timedRow struct {
	src, from, to string
}

// randomLeases gives each of keys (normalised, and the text the source
// writes for each row: spell) a run of validities around [1000, 1300]:
// without overlap each starting the second the previous ends or a little
// after, with overlap sometimes earlier; open starts and ends, RFC 3339
// and epoch mixed. The rows come back shuffled, their ids their source
// index.
func randomLeases(r *rand.Rand, keys []string, spell func(key string) string, overlap bool) ([]naiveRow, []timedRow) {
	var rows []naiveRow
	var data []timedRow
	for _, key := range keys {
		at := int64(1000 + r.IntN(10))
		for i := range 1 + r.IntN(5) {
			from := at
			if overlap && r.IntN(3) == 0 {
				from -= r.Int64N(20)
			} else {
				from += r.Int64N(3) // 0: starts when the previous ends
			}
			to := from + 1 + r.Int64N(40)
			fs, ts := strconv.FormatInt(from, 10), strconv.FormatInt(to, 10)
			lo, hi := from, to-1
			if i == 0 && r.IntN(5) == 0 {
				fs, lo = "", -1<<63 // always was
			}
			if r.IntN(4) == 0 {
				ts = timeText(to)
			}
			if r.IntN(10) == 0 {
				ts, hi = "", 1<<63-1 // still is
			}
			rows = append(rows, naiveRow{key: key, lo: lo, hi: hi})
			data = append(data, timedRow{spell(key), fs, ts})
			at = to
			if ts == "" {
				break
			}
		}
	}
	perm := r.Perm(len(rows))
	srows, sdata := make([]naiveRow, len(rows)), make([]timedRow, len(rows))
	for i, p := range perm {
		srows[i], sdata[i] = rows[p], data[p]
		srows[i].id = i
	}
	return srows, sdata
}

// timedTable compiles rows of key,start,end,id of a match kind, bounded
// in time.
func timedTable(t testing.TB, kind string, fold bool, policy string, data []timedRow) *reader.Table {
	t.Helper()
	src := make([][]string, len(data))
	for i, d := range data {
		src[i] = []string{d.src, d.from, d.to, strconv.Itoa(i)}
	}
	tbl, _ := build(t, rowsOf([]string{"key", "start", "end", "id"}, src...),
		compile.Options{Key: []string{"key"}, Match: kind, FoldCase: fold, ValidFrom: "start", ValidTo: "end", Overlap: policy})
	if !tbl.TimeBounded() || tbl.MatchKind().String() != kind || tbl.Rows() != len(data) {
		t.Fatalf("a %s table (time-bounded %v) of %d rows, want a %s table bounded in time of %d", tbl.MatchKind(), tbl.TimeBounded(), tbl.Rows(), kind, len(data))
	}
	if err := tbl.Verify(); err != nil {
		t.Fatal(err)
	}
	return tbl
}

// naiveTimed is the scan: for each matching key, in order, its rows valid
// at x in the order of policy.
func naiveTimed(rows []naiveRow, keys []string, x int64, policy string) []string {
	want := []string{}
	for _, k := range keys {
		want = append(want, naiveMatch(rows, k, x, policy)...)
	}
	return want
}

// checkTimed compares MatchAt, LookupAt and GetAt of key at x with want,
// and Match, Lookup and Get with the scan at the current time (nowWant).
func checkTimed(t *testing.T, tbl *reader.Table, key string, x int64, want []string, what string) {
	t.Helper()
	out := make([]reader.View, 64)
	got := idsOf(out[:tbl.MatchAt([]byte(key), x, out)], 3)
	if !slices.Equal(got, want) {
		t.Fatalf("%s: MatchAt(%q, %d) = %v, the scan gives %v", what, key, x, got, want)
	}
	var row reader.Row
	ok := tbl.GetAt([]byte(key), x, &row)
	if ok != (len(want) > 0) || ok && string(row.Col(3)) != want[0] {
		t.Fatalf("%s: GetAt(%q, %d) = %q %v, want %v", what, key, x, row.Col(3), ok, want)
	}
	v, ok := tbl.LookupAt([]byte(key), x)
	if ok != (len(want) > 0) || ok && string(v.Col(3)) != want[0] {
		t.Fatalf("%s: LookupAt(%q, %d) = %q %v, want %v", what, key, x, v.Col(3), ok, want)
	}
	if len(want) > 1 {
		if n := tbl.MatchAt([]byte(key), x, out[:1]); n != 1 || string(out[0].Col(3)) != want[0] {
			t.Fatalf("%s: MatchAt(%q, %d) with room for one gave %d rows", what, key, x, n)
		}
	}
}

var policies = []string{"", "narrowest", "first"}

// TestSuffixTimeDifferential: random suffix tables of names that share
// labels, each name with a run of validities (spelt *.name, .name, NAME
// by turns: one key), against the label walk of the naive map, each name
// found answering its rows valid at the time.
func TestSuffixTimeDifferential(t *testing.T) {
	differential(t)
	for _, policy := range policies {
		for seed := range uint64(20) {
			g := domainGen{rand.New(rand.NewPCG(seed, 17))}
			seen := map[string]bool{}
			var names []string
			for len(names) < 1+g.r.IntN(40) {
				n := g.name(1 + g.r.IntN(3))
				if !seen[n] {
					seen[n] = true
					names = append(names, n)
				}
			}
			rows, data := randomLeases(g.r, names, func(k string) string { return g.decorate(k, true) }, policy != "")
			tbl := timedTable(t, "suffix", false, policy, data)
			for range 300 {
				q := g.decorate(g.name(5), false)
				var keys []string // the suffixes of q that are names, longest first
				for s := strings.ToLower(strings.TrimSuffix(q, ".")); ; {
					if seen[s] {
						keys = append(keys, s)
					}
					i := strings.IndexByte(s, '.')
					if i < 0 {
						break
					}
					s = s[i+1:]
				}
				for x := int64(990); x <= 1300; x += 1 + g.r.Int64N(6) {
					checkTimed(t, tbl, q, x, naiveTimed(rows, keys, x, policy), fmt.Sprintf("policy %q seed %d", policy, seed))
				}
			}
		}
	}
}

// TestWildcardTimeDifferential: random tables of overlapping globs, each
// with a run of validities, against the loop over every glob (the most
// literal characters first, then the first row of each in source order).
func TestWildcardTimeDifferential(t *testing.T) {
	differential(t)
	for _, policy := range policies {
		for seed := range uint64(20) {
			g := globGen{rand.New(rand.NewPCG(seed, 19))}
			fold := seed%3 == 0
			seen := map[string]bool{}
			var globs []string
			for len(globs) < 1+g.r.IntN(40) {
				gl := g.glob()
				if fold {
					gl = strings.ToLower(gl)
				}
				if !seen[gl] {
					seen[gl] = true
					globs = append(globs, gl)
				}
			}
			spell := func(k string) string { return k }
			if fold {
				spell = func(k string) string {
					if g.r.IntN(2) == 0 {
						return strings.ToUpper(k)
					}
					return k
				}
			}
			rows, data := randomLeases(g.r, globs, spell, policy != "")
			tbl := timedTable(t, "wildcard", fold, policy, data)
			order := firstSeen(rows)
			slices.SortStableFunc(order, func(a, b string) int {
				// Most literal characters first: '*' and '?' are not.
				lit := func(g string) int { return utf8.RuneCountInString(g) - strings.Count(g, "*") - strings.Count(g, "?") }
				return cmp.Compare(lit(b), lit(a))
			})
			res := map[string]*regexp.Regexp{}
			for _, gl := range globs {
				res[gl] = naiveGlob(gl, fold)
			}
			for range 300 {
				q := g.text(g.r.IntN(7))
				var keys []string
				for _, gl := range order {
					if res[gl].MatchString(q) {
						keys = append(keys, gl)
					}
				}
				for x := int64(990); x <= 1300; x += 1 + g.r.Int64N(6) {
					checkTimed(t, tbl, q, x, naiveTimed(rows, keys, x, policy), fmt.Sprintf("policy %q seed %d", policy, seed))
				}
			}
		}
	}
}

// TestPatternTimeDifferential: random tables of adversarial patterns,
// each with a run of validities, against the loop of regexp.Match over
// the patterns in the order of their first rows.
func TestPatternTimeDifferential(t *testing.T) {
	differential(t)
	for _, policy := range policies {
		for seed := range uint64(20) {
			g := patternGen{rand.New(rand.NewPCG(seed, 23))}
			seen := map[string]bool{}
			var pats []string
			for len(pats) < 1+g.r.IntN(30) {
				p := g.pattern()
				if !seen[p] {
					seen[p] = true
					pats = append(pats, p)
				}
			}
			rows, data := randomLeases(g.r, pats, func(k string) string { return k }, policy != "")
			tbl := timedTable(t, "pattern", false, policy, data)
			order := firstSeen(rows)
			res := map[string]*regexp.Regexp{}
			for _, p := range pats {
				res[p] = regexp.MustCompile(p)
			}
			for range 300 {
				q := g.key()
				var keys []string
				for _, p := range order {
					if res[p].MatchString(q) {
						keys = append(keys, p)
					}
				}
				for x := int64(990); x <= 1300; x += 1 + g.r.Int64N(6) {
					checkTimed(t, tbl, q, x, naiveTimed(rows, keys, x, policy), fmt.Sprintf("policy %q seed %d", policy, seed))
				}
			}
		}
	}
}

// firstSeen returns the distinct keys of rows in the order of their first
// rows.
func firstSeen(rows []naiveRow) []string {
	var keys []string
	seen := map[string]bool{}
	for _, r := range rows {
		if !seen[r.key] {
			seen[r.key] = true
			keys = append(keys, r.key)
		}
	}
	return keys
}

// TestTimeKindsOverlapRefused: two rows of one key (one suffix however
// spelt, one glob, one pattern) whose validities overlap are refused with
// both rows' file:line:column, unless --overlap ranks them.
func TestTimeKindsOverlapRefused(t *testing.T) {
	for _, c := range []struct {
		kind, a, b, q string
	}{{"suffix", "evil.com", "*.EVIL.com", "web.evil.com"}, {"wildcard", "web-*", "web-*", "web-1"}, {"pattern", "^web", "^web", "web-1"}} {
		src := rowsOf([]string{"key", "start", "end", "id"}, []string{"other", "100", "", "0"},
			[]string{c.a, "100", "201", "1"}, []string{c.b, "200", "", "2"})
		opts := compile.Options{Key: []string{"key"}, Match: c.kind, ValidFrom: "start", ValidTo: "end", SourceName: "list.csv"}
		_, err := compile.File(src, t.TempDir()+"/t.lut", opts)
		if err == nil || !strings.Contains(err.Error(), "list.csv:4:2: validities of one key overlap: [200, open) of this row and [100, 201) of the row at list.csv:3:2") {
			t.Errorf("%s: %v, want both rows' file:line:column", c.kind, err)
		}
		opts.Overlap = "first"
		src = rowsOf([]string{"key", "start", "end", "id"}, []string{c.a, "100", "201", "1"}, []string{c.b, "200", "", "2"})
		tbl, _ := build(t, src, opts)
		out := make([]reader.View, 4)
		if got := idsOf(out[:tbl.MatchAt([]byte(c.q), 200, out)], 3); !slices.Equal(got, []string{"1", "2"}) {
			t.Errorf("%s with --overlap first: MatchAt at 200 = %v, want [1 2]", c.kind, got)
		}
	}
}

// TestTimeKindsDoNotAllocate: lookups of suffix, wildcard and pattern
// tables bounded in time, hits and misses, do not allocate.
func TestTimeKindsDoNotAllocate(t *testing.T) {
	for _, c := range []struct {
		kind   string
		k1, k2 string
	}{{"suffix", "evil.com", "a.evil.com"}, {"wildcard", "*.evil.com", "a.*"}, {"pattern", `evil\.com$`, `^a\.`}} {
		if raceEnabled && c.kind != "suffix" {
			continue // sync.Pool drops the literal scratch space under the race detector (TestLiteralLookupDoesNotAllocate)
		}
		tbl := timedTable(t, c.kind, false, "", []timedRow{{c.k1, "100", "200"}, {c.k1, "200", ""}, {c.k2, "", "150"}})
		var row reader.Row
		out := make([]reader.View, 4)
		hit, miss := []byte("a.evil.com"), []byte("nothing.example")
		n := testing.AllocsPerRun(1000, func() {
			if !tbl.GetAt(hit, 120, &row) || tbl.MatchAt(hit, 120, out) != 2 || tbl.MatchAt(hit, 170, out) != 1 ||
				tbl.GetAt(miss, 120, &row) || tbl.MatchAt(miss, 120, out) != 0 || !tbl.Get(hit, &row) {
				t.Fatalf("%s: a lookup failed", c.kind)
			}
			if _, ok := tbl.LookupAt(hit, 99); !ok {
				t.Fatalf("%s: LookupAt(99) found nothing", c.kind)
			}
		})
		if n != 0 {
			t.Fatalf("%s: %v allocations per lookup", c.kind, n)
		}
	}
}

// TestSuffixTimeFlag: a suffix table bounded in time has the SUFFIX
// section's time flag; without it (or with it in a table not bounded in
// time) the table does not open.
func TestSuffixTimeFlag(t *testing.T) {
	_, path := build(t, rowsOf([]string{"key", "start", "end"}, []string{"evil.com", "1", "2"}),
		compile.Options{Key: []string{"key"}, Match: "suffix", ValidFrom: "start", ValidTo: "end"})
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := reader.OpenBytes(good)
	if err != nil {
		t.Fatal(err)
	}
	s := sectionOf(t, tbl, format.SectionSuffix)
	if good[s.Off] != byte(format.SuffixTimeBound) {
		t.Fatalf("SUFFIX flags %#x, want the time flag", good[s.Off])
	}
	b := bytes.Clone(good)
	b[s.Off] = 0 // the checksum is Verify's; Open checks the flag
	if _, err := reader.OpenBytes(b); err == nil || !strings.Contains(err.Error(), "time flag") {
		t.Fatalf("a suffix table bounded in time without the flag: %v", err)
	}
	h := tbl.Header()
	h.Incompat &^= format.FeatureTimeBound
	b = bytes.Clone(good)
	h.Encode(b)
	if _, err := reader.OpenBytes(b); err == nil {
		t.Fatal("a suffix table with the time flag and no TIME_BOUND bit opened")
	}
}

// TestTimeKindsEveryByteFlipped: suffix, wildcard and pattern tables
// bounded in time with any byte flipped, or cut short, fail to open or
// fail Verify, and their lookups do not panic.
func TestTimeKindsEveryByteFlipped(t *testing.T) {
	for kind, keys := range map[string][]string{
		"suffix":   {"evil.com", "a.evil.com", "b.org"},
		"wildcard": {"*.evil.com", "a.*", "*"},
		"pattern":  {`evil\.com$`, `^a\.`, `\d`},
	} {
		var data [][]string
		for i, k := range keys {
			data = append(data, []string{k, "", "150", strconv.Itoa(i)}, []string{k, "150", "", strconv.Itoa(i + 10)})
		}
		_, path := build(t, rowsOf([]string{"key", "start", "end", "id"}, data...),
			compile.Options{Key: []string{"key"}, Match: kind, ValidFrom: "start", ValidTo: "end"})
		checkDamage(t, path, [][]byte{[]byte("a.evil.com"), []byte("b.org"), []byte("x1")})
	}
}

// TestEmptyTimeKindTables: suffix, wildcard and pattern tables bounded in
// time of no rows compile, verify and find nothing.
func TestEmptyTimeKindTables(t *testing.T) {
	for _, kind := range []string{"suffix", "wildcard", "pattern"} {
		tbl := timedTable(t, kind, false, "", nil)
		out := make([]reader.View, 2)
		if _, ok := tbl.LookupAt([]byte("a.com"), 1); ok || tbl.MatchAt([]byte("a.com"), 1, out) != 0 || tbl.Match([]byte("a.com"), out) != 0 {
			t.Fatalf("%s: an empty table found a row", kind)
		}
	}
}
