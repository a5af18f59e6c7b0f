package reader_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/zeebo/xxh3"

	"github.com/lutkit/lutkit/compile"
	"github.com/lutkit/lutkit/format"
	"github.com/lutkit/lutkit/reader"
)

// literalTable compiles rows of key,id into a wildcard or pattern table.
func literalTable(t testing.TB, kind string, fold bool, rows ...[]string) *reader.Table {
	t.Helper()
	tbl, _ := build(t, rowsOf([]string{"key", "id"}, rows...), compile.Options{Key: []string{"key"}, Match: kind, FoldCase: fold})
	return tbl
}

// matchIDs returns the id column of every row Match gives for key.
func matchIDs(tbl *reader.Table, key string, out []reader.View) []string {
	n := tbl.Match([]byte(key), out)
	got := []string{}
	for _, v := range out[:n] {
		got = append(got, string(v.Col(1)))
	}
	return got
}

func TestWildcardSemantics(t *testing.T) {
	tbl := literalTable(t, "wildcard", false,
		[]string{"web-*", "web"},
		[]string{"*.corp.example.com", "corp"},
		[]string{"*-db-*", "db"},
		[]string{"10.1.*", "net10"},
		[]string{"web-db-01", "exact"},
		[]string{"*", "any"},
		[]string{"web-*-01", "web01"},
		[]string{"*b-*", "b"},
	)
	if tbl.MatchKind() != format.MatchWildcard {
		t.Fatalf("match %s", tbl.MatchKind())
	}
	out := make([]reader.View, 8)
	for _, c := range []struct {
		key  string
		want []string
	}{
		// web-* and *-db-* have 4 literal characters: web-* is first in
		// the source.
		{"web-db-01", []string{"exact", "web01", "web", "db", "b", "any"}},
		{"web-02", []string{"web", "b", "any"}},
		{"web-", []string{"web", "b", "any"}}, // '*' matches nothing too
		{"web-x-01", []string{"web01", "web", "b", "any"}},
		{"a.corp.example.com", []string{"corp", "any"}},
		{".corp.example.com", []string{"corp", "any"}},
		{"corp.example.com", []string{"any"}},
		{"x-db-y", []string{"db", "b", "any"}},
		{"-db-", []string{"db", "b", "any"}},
		{"10.1.2.3", []string{"net10", "any"}},
		{"10.10.2.3", []string{"any"}},
		{"WEB-01", []string{"any"}}, // case counts without --fold-case
		{"", []string{"any"}},
	} {
		if got := matchIDs(tbl, c.key, out); !slices.Equal(got, c.want) {
			t.Errorf("Match(%q) = %q; want %q", c.key, got, c.want)
		}
		var row reader.Row
		if !tbl.Get([]byte(c.key), &row) || string(row.Col(1)) != c.want[0] {
			t.Errorf("Get(%q) = %q; want %q", c.key, row.Col(1), c.want[0])
		}
	}
	// '?' is exactly one character; it is not literal, so a?c and a*c tie
	// (the first in the source wins) and abc beats both.
	q := literalTable(t, "wildcard", false,
		[]string{"db-??", "db2"}, []string{"a*c", "star"}, []string{"a?c", "one"}, []string{"abc", "abc"}, []string{"?", "char"})
	for _, c := range []struct {
		key  string
		want []string
	}{
		{"db-01", []string{"db2"}},
		{"db-é1", []string{"db2"}}, // é is one character
		{"db-1", []string{}},       // too short
		{"db-012", []string{}},     // too long
		{"abc", []string{"abc", "star", "one"}},
		{"a?c", []string{"star", "one"}},
		{"ac", []string{"star"}},
		{"é", []string{"char"}},
		{"\xff", []string{"char"}}, // a byte that starts no character is one
		{"\xc3\xa9x", []string{}},
	} {
		if got := matchIDs(q, c.key, out); !slices.Equal(got, c.want) {
			t.Errorf("Match(%q) = %q; want %q", c.key, got, c.want)
		}
	}
	// Ties of literal characters go by source order, whichever order.
	two := literalTable(t, "wildcard", false, []string{"*-db-*", "db"}, []string{"web-*", "web"})
	if got := matchIDs(two, "web-db-1", out); !slices.Equal(got, []string{"db", "web"}) {
		t.Errorf("tie: Match = %q; want db (first in the source), web", got)
	}
	folded := literalTable(t, "wildcard", true, []string{"WEB-*", "web"}, []string{"*.Corp.Example.COM", "corp"})
	for key, want := range map[string]string{"web-01": "web", "Web-01": "web", "A.CORP.example.com": "corp"} {
		var row reader.Row
		if !folded.Get([]byte(key), &row) || string(row.Col(1)) != want {
			t.Errorf("folded Get(%q) = %q; want %q", key, row.Col(1), want)
		}
	}
	if v, ok := folded.LookupStored([]byte("web-*")); !ok || string(v.Col(0)) != "WEB-*" {
		t.Errorf("LookupStored(web-*) = %q, %v", v.Col(0), ok)
	}
	for _, tb := range []*reader.Table{tbl, q, two, folded} {
		if err := tb.Verify(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestPatternSemantics(t *testing.T) {
	tbl := literalTable(t, "pattern", false,
		[]string{`(?i)googlebot`, "bot"},
		[]string{`^Mozilla/5\.0 .*Firefox/`, "firefox"},
		[]string{`curl/\d+`, "curl"},
		[]string{`\d{3}-\d{4}`, "phone"},
		[]string{`(foo|bar)baz`, "fb"},
		[]string{`^$`, "empty"},
		[]string{`Firefox`, "ff-anywhere"},
		[]string{`(?i)ſtraße`, "strasse"}, // the long s folds to s and S
		[]string{`(?i)kelvin`, "kelvin"},
	)
	if tbl.MatchKind() != format.MatchPattern {
		t.Fatalf("match %s", tbl.MatchKind())
	}
	out := make([]reader.View, 8)
	for _, c := range []struct {
		key  string
		want []string
	}{
		{"Mozilla/5.0 (X11) Gecko Firefox/120", []string{"firefox", "ff-anywhere"}},
		{"xMozilla/5.0 (X11) Gecko Firefox/120", []string{"ff-anywhere"}}, // ^ anchors
		{"Mozilla/5.0 (compatible; GoogleBot/2.1)", []string{"bot"}},
		{"GOOGLEBOT", []string{"bot"}},
		{"curl/8.1 555-1234", []string{"curl", "phone"}},
		{"curl/", nil},
		{"xbarbazx", []string{"fb"}},
		{"fobaz", nil},
		{"", []string{"empty"}},
		{"STRASSE", nil},
		{"STRAßE", []string{"strasse"}},
		{"\u212aelvin", []string{"kelvin"}}, // the Kelvin sign folds to k
		{"KELVIN", []string{"kelvin"}},
	} {
		got := matchIDs(tbl, c.key, out)
		if c.want == nil {
			c.want = []string{}
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("Match(%q) = %q; want %q", c.key, got, c.want)
		}
		var row reader.Row
		ok := tbl.Get([]byte(c.key), &row)
		if ok != (len(c.want) > 0) || ok && string(row.Col(1)) != c.want[0] {
			t.Errorf("Get(%q) = %q, %v; want %q", c.key, row.Col(1), ok, c.want)
		}
	}
	if err := tbl.Verify(); err != nil {
		t.Fatal(err)
	}
}

func TestLiteralCompileErrors(t *testing.T) {
	for _, c := range []struct {
		kind, key, want string
	}{
		{"pattern", "(ab", "missing closing )"},
		{"pattern", "a{2000}", "invalid repeat count"},
		{"pattern", `\p{Nope}`, "invalid character class range"},
		{"wildcard", "", "empty wildcard key"},
	} {
		src := rowsOf([]string{"id", "key"}, []string{"1", "ok"}, []string{"2", c.key})
		_, err := compile.Write(src, tempFile(t), compile.Options{Key: []string{"key"}, Match: c.kind, SourceName: "list.csv"})
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "list.csv:3:2:") {
			t.Errorf("%s key %q: error %v, want %q at list.csv:3:2", c.kind, c.key, err, c.want)
		}
	}
	src := rowsOf([]string{"key", "id"}, []string{"a.*", "1"}, []string{"a.*", "2"})
	if _, err := compile.Write(src, tempFile(t), compile.Options{Key: []string{"key"}, Match: "pattern"}); err == nil || !strings.Contains(err.Error(), "duplicate key") {
		t.Errorf("a repeated pattern: %v, want a duplicate key", err)
	}
	for _, c := range []struct {
		opts compile.Options
		want string
	}{
		{compile.Options{Key: []string{"key"}, Match: "pattern", FoldCase: true}, "(?i)"},
		{compile.Options{Key: []string{"a", "b"}, Match: "wildcard"}, "one key column"},
		{compile.Options{Key: []string{"a"}, Match: "pattern", ValidFrom: "f", ValidTo: "f"}, "same column"},
	} {
		if err := c.opts.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.opts, err, c.want)
		}
	}
}

func TestLiteralLookupDoesNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("allocations differ under the race detector (sync.Pool drops scratch space); run without -race")
	}
	w := literalTable(t, "wildcard", false, []string{"web-*", "1"}, []string{"*.corp.example.com", "2"}, []string{"*-db-*", "3"})
	checkNoAllocs(t, w, "web-01", []byte("web-db-01"), []byte("a.corp.example.com"), []byte("nope"))
	f := literalTable(t, "wildcard", true, []string{"WEB-*", "1"}, []string{"*", "2"})
	checkNoAllocs(t, f, "web-01", []byte("Web-01"), []byte("x"), []byte(""))
	p := literalTable(t, "pattern", false, []string{`(?i)googlebot`, "1"}, []string{`curl/\d+`, "2"}, []string{`^\d+$`, "3"})
	checkNoAllocs(t, p, "GoogleBot", []byte("Googlebot/2.1"), []byte("curl/8"), []byte("Mozilla"))
}

// globGen draws globs and keys from small pools of pieces, so that
// globs overlap: web-*, *-db-*, web-db-*, *.corp.
type globGen struct{ r *rand.Rand }

var globPieces = []string{"web", "db", "-", ".", "corp", "01", "a", "b", "ab", "é", "W", "?"}

func (g globGen) text(parts int) string {
	var b strings.Builder
	for range parts {
		b.WriteString(globPieces[g.r.IntN(len(globPieces))])
	}
	return b.String()
}

func (g globGen) glob() string {
	var b strings.Builder
	for range 1 + g.r.IntN(4) {
		switch g.r.IntN(4) {
		case 0:
			b.WriteString(strings.Repeat("*", 1+g.r.IntN(2)))
		case 1:
			b.WriteString(strings.Repeat("?", 1+g.r.IntN(2)))
		default:
			b.WriteString(g.text(1 + g.r.IntN(2)))
		}
	}
	return b.String()
}

// naiveGlob is the obvious implementation of one glob: a regular
// expression of its pieces, '*' as .* and '?' as . (one character, as
// path.Match has it).
func naiveGlob(glob string, fold bool) *regexp.Regexp {
	var b strings.Builder
	for _, r := range glob {
		switch r {
		case '*':
			b.WriteString(".*")
		case '?':
			b.WriteString(".")
		default:
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	flags := "(?s)"
	if fold {
		flags = "(?si)"
	}
	return regexp.MustCompile(flags + "^" + b.String() + "$")
}

// Random tables of overlapping globs against the naive loop over every
// glob, best first: Get, LookupBatch and Match give its answers.
func TestWildcardDifferential(t *testing.T) {
	differential(t)
	for seed := uint64(1); seed <= 30; seed++ {
		g := globGen{rand.New(rand.NewPCG(seed, 7))}
		fold := seed%3 == 0
		type row struct {
			glob string
			re   *regexp.Regexp
			lits int
			id   string
		}
		var rows []row
		seen := map[string]bool{}
		var src [][]string
		for len(rows) < 1+g.r.IntN(200) {
			glob := g.glob()
			k := glob
			if fold {
				k = strings.ToLower(glob)
			}
			if seen[k] {
				continue
			}
			seen[k] = true
			id := strconv.Itoa(len(rows))
			lits := utf8.RuneCountInString(glob) - strings.Count(glob, "*") - strings.Count(glob, "?")
			rows = append(rows, row{glob, naiveGlob(glob, fold), lits, id})
			src = append(src, []string{glob, id})
		}
		tbl := literalTable(t, "wildcard", fold, src...)
		if err := tbl.Verify(); err != nil {
			t.Fatal(err)
		}
		// The naive order: most literal characters, then source order.
		order := slices.Clone(rows)
		slices.SortStableFunc(order, func(a, b row) int { return b.lits - a.lits })
		var keys [][]byte
		for range 1500 {
			keys = append(keys, []byte(g.text(g.r.IntN(7))))
		}
		batch := make([]reader.View, len(keys))
		found := tbl.LookupBatch(keys, batch)
		counted := 0
		out := make([]reader.View, len(rows))
		var r reader.Row
		for i, k := range keys {
			want := []string{}
			for _, o := range order {
				if o.re.Match(k) {
					want = append(want, o.id)
				}
			}
			first := ""
			if len(want) > 0 {
				first = want[0]
				counted++
			}
			if got := matchIDs(tbl, string(k), out); !slices.Equal(got, want) {
				t.Fatalf("seed %d: Match(%q) = %q; want %q", seed, k, got, want)
			}
			if ok := tbl.Get(k, &r); ok != (first != "") || ok && string(r.Col(1)) != first {
				t.Fatalf("seed %d: Get(%q) = %q, %v; want %q", seed, k, r.Col(1), ok, first)
			}
			if string(batch[i].Col(1)) != first {
				t.Fatalf("seed %d: LookupBatch(%q) = %q; want %q", seed, k, batch[i].Col(1), first)
			}
		}
		if found != counted {
			t.Fatalf("seed %d: LookupBatch found %d, the naive loop %d", seed, found, counted)
		}
	}
}

// patternGen draws adversarial patterns: alternations, classes, anchors,
// nested quantifiers, case folding, patterns without a literal.
type patternGen struct{ r *rand.Rand }

var patternAtoms = []string{
	"ab", "web", "db", "Bot", "k", "s", "é", "x", "-", `\.`, ".", `\d`, `\w+`, "[a-c]", "[^a]", "[0-9]{2}",
	"(?i:bot)", "(?i)sk", "(ab|cd)", "(a|b|)", "(?:web|db)+", "((ab)*c)+", "(a+)+", "a{2,3}", "x?", ".*", "",
}

func (g patternGen) pattern() string {
	var b strings.Builder
	if g.r.IntN(5) == 0 {
		b.WriteString("^")
	}
	n := 1 + g.r.IntN(3)
	for i := range n {
		a := patternAtoms[g.r.IntN(len(patternAtoms))]
		switch g.r.IntN(6) {
		case 0:
			a = "(" + a + ")*"
		case 1:
			a = "(?:" + a + "|" + patternAtoms[g.r.IntN(len(patternAtoms))] + ")"
		case 2:
			a = "(" + a + "){1,2}"
		}
		if i > 0 && g.r.IntN(8) == 0 {
			b.WriteString("|")
		}
		b.WriteString(a)
	}
	if g.r.IntN(5) == 0 {
		b.WriteString("$")
	}
	return b.String()
}

var keyPieces = []string{"ab", "AB", "web", "WEB", "db", "bot", "BOT", "K", "\u212a", "ſ", "S", "é", "É", "x", "-", ".", "7", "42", "c", "cd", "\xff"}

func (g patternGen) key() string {
	var b strings.Builder
	for range g.r.IntN(8) {
		b.WriteString(keyPieces[g.r.IntN(len(keyPieces))])
	}
	return b.String()
}

// Random tables of adversarial patterns against the naive loop of
// regexp.Match over every pattern, in source order.
func TestPatternDifferential(t *testing.T) {
	differential(t)
	for seed := uint64(1); seed <= 30; seed++ {
		g := patternGen{rand.New(rand.NewPCG(seed, 11))}
		var res []*regexp.Regexp
		var ids []string
		seen := map[string]bool{}
		var src [][]string
		for len(res) < 1+g.r.IntN(150) {
			p := g.pattern()
			if seen[p] {
				continue
			}
			seen[p] = true
			res = append(res, regexp.MustCompile(p))
			ids = append(ids, strconv.Itoa(len(ids)))
			src = append(src, []string{p, ids[len(ids)-1]})
		}
		tbl := literalTable(t, "pattern", false, src...)
		if err := tbl.Verify(); err != nil {
			t.Fatal(err)
		}
		out := make([]reader.View, len(res))
		var r reader.Row
		for range 1500 {
			k := g.key()
			want := []string{}
			for i, re := range res {
				if re.MatchString(k) {
					want = append(want, ids[i])
				}
			}
			if got := matchIDs(tbl, k, out); !slices.Equal(got, want) {
				t.Fatalf("seed %d: Match(%q) = %q; want %q (patterns %q)", seed, k, got, want, src)
			}
			ok := tbl.Get([]byte(k), &r)
			if ok != (len(want) > 0) || ok && string(r.Col(1)) != want[0] {
				t.Fatalf("seed %d: Get(%q) = %q, %v; want %q", seed, k, r.Col(1), ok, want)
			}
		}
	}
}

// Every byte of small wildcard and pattern tables flipped in turn, and
// every cut: Open or Verify refuses it, and lookups do not panic.
func TestLiteralEveryByteFlipped(t *testing.T) {
	var wrows, prows [][]string
	var keys [][]byte
	for i := range 12 {
		wrows = append(wrows, []string{fmt.Sprintf("h%d-*.zone%d", i, i%3), strconv.Itoa(i)})
		prows = append(prows, []string{fmt.Sprintf(`^h%d(a|b)+\.zone%d`, i, i%3), strconv.Itoa(i)})
		keys = append(keys, fmt.Appendf(nil, "h%d-ab.zone%d", i, i%3), fmt.Appendf(nil, "h%dab.zone%d", i, i%3))
	}
	wrows = append(wrows, []string{"*", "any"})
	prows = append(prows, []string{`\d`, "digit"})
	for kind, rows := range map[string][][]string{"wildcard": wrows, "pattern": prows} {
		_, path := build(t, rowsOf([]string{"key", "id"}, rows...), compile.Options{Key: []string{"key"}, Match: kind})
		checkDamage(t, path, keys)
	}
}

// FuzzWildcardLookup looks arbitrary keys up in a small wildcard table
// and checks every answer against the naive loop.
func FuzzWildcardLookup(f *testing.F) {
	globs := []string{"web-*", "*.corp.example.com", "*-db-*", "10.1.*", "web-db-01", "a*b*c", "**x", "*", "db-??", "?", "*?é?", "a?c"}
	var src [][]string
	for i, g := range globs {
		src = append(src, []string{g, strconv.Itoa(i)})
	}
	tbl := literalTable(f, "wildcard", false, src...)
	for _, s := range []string{"web-db-01", "a.corp.example.com", "abc", "x", "", "10.1.", "aXbYc", "db-é\xff", "\xffé\xc3", "a?c"} {
		f.Add(s)
	}
	out := make([]reader.View, len(globs))
	f.Fuzz(func(t *testing.T, k string) {
		want := []string{}
		type cand struct{ lits, i int }
		var cs []cand
		for i, g := range globs {
			if naiveGlob(g, false).MatchString(k) {
				cs = append(cs, cand{utf8.RuneCountInString(g) - strings.Count(g, "*") - strings.Count(g, "?"), i})
			}
		}
		slices.SortStableFunc(cs, func(a, b cand) int { return b.lits - a.lits })
		for _, c := range cs {
			want = append(want, strconv.Itoa(c.i))
		}
		if got := matchIDs(tbl, k, out); !slices.Equal(got, want) {
			t.Fatalf("Match(%q) = %q; want %q", k, got, want)
		}
	})
}

// FuzzPatternLookup looks arbitrary keys up in a small pattern table and
// checks every answer against the naive regexp loop.
func FuzzPatternLookup(f *testing.F) {
	pats := []string{`(?i)googlebot`, `^Mozilla/5\.0 .*Firefox/`, `curl/\d+`, `(foo|bar)+baz`, `(?i)ſk`, `^$`, `[a-c]{3}`, `é(x|y)`}
	var src [][]string
	var res []*regexp.Regexp
	for i, p := range pats {
		src = append(src, []string{p, strconv.Itoa(i)})
		res = append(res, regexp.MustCompile(p))
	}
	tbl := literalTable(f, "pattern", false, src...)
	for _, s := range []string{"GoogleBot", "Mozilla/5.0 x Firefox/1", "curl/7", "foobarbaz", "SK", "", "abc", "éy", "\xff"} {
		f.Add(s)
	}
	out := make([]reader.View, len(pats))
	f.Fuzz(func(t *testing.T, k string) {
		want := []string{}
		for i, re := range res {
			if re.MatchString(k) {
				want = append(want, strconv.Itoa(i))
			}
		}
		if got := matchIDs(tbl, k, out); !slices.Equal(got, want) {
			t.Fatalf("Match(%q) = %q; want %q", k, got, want)
		}
	})
}

// A header whose feature bits disagree with the WILDCARD or PATTERN
// section (re-checksummed, so that only the bits are wrong) does not
// open.
func TestLiteralFeatureBits(t *testing.T) {
	for kind, bit := range map[string]uint32{"wildcard": format.FeatureWildcard, "pattern": format.FeaturePattern} {
		_, path := build(t, rowsOf([]string{"key", "id"}, []string{"web-*", "1"}), compile.Options{Key: []string{"key"}, Match: kind})
		good, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		tbl, err := reader.OpenBytes(good)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			what     string
			set, clr uint32
		}{
			{"without its bit", 0, bit},
			{"with both bits", format.FeatureWildcard | format.FeaturePattern, 0},
			{"with SUFFIX", format.FeatureSuffix | format.FeatureFoldCase, 0},
			{"with TIME_BOUND", format.FeatureTimeBound, 0},
		} {
			h := tbl.Header()
			h.Incompat = h.Incompat&^c.clr | c.set
			b := bytes.Clone(good)
			h.Encode(b)
			if _, err := reader.OpenBytes(b); err == nil || !errors.Is(err, format.ErrCorrupt) {
				t.Errorf("%s table %s: open gave %v", kind, c.what, err)
			}
		}
	}
}

// Lookups from several goroutines at once in a pattern table whose
// patterns none has compiled yet: each compiles some, all agree with the
// naive loop (run with -race for the cache's sake).
func TestPatternConcurrent(t *testing.T) {
	g := patternGen{rand.New(rand.NewPCG(5, 5))}
	var src [][]string
	var res []*regexp.Regexp
	seen := map[string]bool{}
	for len(src) < 100 {
		p := g.pattern()
		if seen[p] {
			continue
		}
		seen[p] = true
		src = append(src, []string{p, strconv.Itoa(len(src))})
		res = append(res, regexp.MustCompile(p))
	}
	tbl := literalTable(t, "pattern", false, src...)
	var keys []string
	for range 300 {
		keys = append(keys, g.key())
	}
	errs := make(chan error, 4)
	for w := range 4 {
		go func() {
			var row reader.Row
			for i := range keys {
				k := keys[(i+w*75)%len(keys)]
				want := ""
				for j, re := range res {
					if re.MatchString(k) {
						want = strconv.Itoa(j)
						break
					}
				}
				if ok := tbl.Get([]byte(k), &row); ok != (want != "") || ok && string(row.Col(1)) != want {
					errs <- fmt.Errorf("Get(%q) = %q, %v; want %q", k, row.Col(1), ok, want)
					return
				}
			}
			errs <- nil
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// withLiteralFlags returns a copy of a table file whose WILDCARD or
// PATTERN section has the flags word flags, re-checksummed (the section,
// the section table, the header), as a writer of that word would have
// written it.
func withLiteralFlags(t *testing.T, file []byte, flags uint64) []byte {
	t.Helper()
	b := bytes.Clone(file)
	h, err := format.DecodeHeader(b, int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	for i := uint64(0); i < uint64(h.SectionCount); i++ {
		e := b[h.SectionsOff+i*format.SectionEntrySize:]
		if k := le.Uint32(e); k != format.SectionWildcard && k != format.SectionPattern {
			continue
		}
		off, n := le.Uint64(e[8:]), le.Uint64(e[16:])
		le.PutUint64(b[off+48:], flags)
		le.PutUint64(e[24:], xxh3.Hash(b[off:off+n]))
	}
	h.SectionsSum = xxh3.Hash(b[h.SectionsOff : h.SectionsOff+uint64(h.SectionCount)*format.SectionEntrySize])
	h.Encode(b)
	return b
}

// A wildcard table written before '?' was special (its WILDCARD flags
// word zero) keeps reading '?' as itself, and verifies; the table the
// compiler writes today reads it as one character. The glob ?*abcd has
// the same anchor and rank in both syntaxes, so that the old writer's
// file is today's with the flags word cleared. A PATTERN section with a
// flag does not open.
func TestWildcardQuestionCompat(t *testing.T) {
	_, path := build(t, rowsOf([]string{"key", "id"}, []string{"?*abcd", "q"}, []string{"*", "any"}), compile.Options{Key: []string{"key"}, Match: "wildcard"})
	now, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	old := withLiteralFlags(t, now, 0)
	for _, c := range []struct {
		file         []byte
		other, quest string // the answers for xabcd and ?abcd
	}{{now, "q", "q"}, {old, "any", "q"}} {
		tbl, err := reader.OpenBytes(c.file)
		if err != nil {
			t.Fatal(err)
		}
		if err := tbl.Verify(); err != nil {
			t.Fatal(err)
		}
		var r reader.Row
		if !tbl.Get([]byte("xabcd"), &r) || string(r.Col(1)) != c.other {
			t.Errorf("Get(xabcd) = %q; want %q", r.Col(1), c.other)
		}
		if !tbl.Get([]byte("?abcd"), &r) || string(r.Col(1)) != c.quest {
			t.Errorf("Get(?abcd) = %q; want %q", r.Col(1), c.quest)
		}
	}
	if _, err := reader.OpenBytes(withLiteralFlags(t, now, 2)); err == nil || !errors.Is(err, format.ErrCorrupt) {
		t.Errorf("an unknown glob flag: open gave %v", err)
	}
	_, path = build(t, rowsOf([]string{"key", "id"}, []string{"a.c", "1"}), compile.Options{Key: []string{"key"}, Match: "pattern"})
	pat, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := reader.OpenBytes(withLiteralFlags(t, pat, 1)); err == nil || !errors.Is(err, format.ErrCorrupt) {
		t.Errorf("a PATTERN section with a flag: open gave %v", err)
	}
}
