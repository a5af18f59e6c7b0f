package format

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// literalSeeds are sections of small tables of both kinds.
func literalSeeds(t testing.TB) [][]byte {
	globs := [][]byte{[]byte("web-*"), []byte("*.corp.example.com"), []byte("*-db-*"), []byte("*"), []byte("web-db-01")}
	offs := []uint64{0, 8, 16, 24, 32}
	pats := [][]byte{[]byte(`(?i)googlebot`), []byte(`curl/\d+`), []byte(`(foo|bar)baz`), []byte(`.*`), []byte(`^a+b`)}
	rows, _, err := PatternRows(pats, offs)
	if err != nil {
		t.Fatal(err)
	}
	globs = append(globs, []byte("db-??"), []byte("?"))
	offs = append(offs, 40, 48)
	return [][]byte{
		AppendLiteralIndexFlags(nil, uint64(GlobSyntax), WildcardRows(globs, offs, GlobSyntax)),
		AppendLiteralIndex(nil, WildcardRows(globs, offs, 0)), AppendLiteralIndex(nil, rows), AppendLiteralIndex(nil, nil),
	}
}

// FuzzLiteralIndex decodes arbitrary bytes as a WILDCARD or PATTERN
// section: DecodeLiteralIndex must fail, or give a section whose lookups
// stay in bounds and end, never panic.
func FuzzLiteralIndex(f *testing.F) {
	for _, b := range literalSeeds(f) {
		f.Add(b, []byte("web-db-01.corp.example.com curl/7 foobaz"))
	}
	f.Fuzz(func(t *testing.T, b, key []byte) {
		rows := uint64(0) // the section's own R, so that the count check passes
		if len(b) >= 8 {
			rows = uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24
		}
		x, err := DecodeLiteralIndex(b, 0, rows)
		if err != nil {
			return
		}
		cand, _ := x.Candidates(nil, nil, key)
		for _, r := range cand {
			if _, ok := x.Record(r); !ok && uint64(r) < x.R {
				t.Fatalf("rank %d of %d has no record", r, x.R)
			}
		}
	})
}

// Every text a pattern matches contains one of its anchors, ASCII case
// aside: the prefilter never drops a row that matches.
func FuzzPatternAnchors(f *testing.F) {
	for _, s := range []struct{ p, k string }{
		{`(?i)googlebot`, "GOOGLEBOT"}, {`(?i)ſtraße`, "STRAßE"}, {`(?i)k`, "\u212a"}, {`a\x{FFFD}b`, "a\xffb"},
		{`(foo|bar)+baz`, "barbaz"}, {`x{2,}y`, "xxy"}, {`^(ab|cd)$`, "cd"}, {`é+`, "éé"}, {`[a-c]z`, "bz"},
	} {
		f.Add(s.p, s.k)
	}
	f.Fuzz(func(t *testing.T, p, k string) {
		re, err := regexp.Compile(p)
		if err != nil {
			if _, aerr := PatternAnchors([]byte(p)); aerr == nil {
				t.Fatalf("PatternAnchors accepted %q, which does not compile", p)
			}
			return
		}
		anchors, err := PatternAnchors([]byte(p))
		if err != nil {
			t.Fatalf("PatternAnchors(%q): %v", p, err)
		}
		if len(anchors) == 0 || !re.MatchString(k) {
			return
		}
		lk := lowered([]byte(k))
		for _, a := range anchors {
			if len(a) > 0 && strings.Contains(lk, lowered(a)) {
				return
			}
		}
		t.Fatalf("%q matches %q, which contains none of its anchors %q", p, k, anchors)
	})
}

// MatchGlob agrees with a plain match by dynamic programming, in both
// syntaxes: byte by byte without '?', character by character with it.
func FuzzMatchGlob(f *testing.F) {
	for _, s := range []struct{ g, k string }{
		{"web-*", "web-01"}, {"*-db-*", "x-db-y"}, {"a*b*c", "aXbYbc"}, {"**", ""}, {"*a", "ba"}, {"a", "ab"},
		{"db-??", "db-01"}, {"?", "é"}, {"?", "\xff"}, {"*?*?", "\U0001d11e"}, {"\xc3*", "é"}, {"a?c", "a?c"}, {"*?", ""},
	} {
		f.Add(s.g, s.k, true)
		f.Add(s.g, s.k, false)
	}
	f.Fuzz(func(t *testing.T, g, k string, q bool) {
		if len(g) > 64 || len(k) > 256 {
			return
		}
		var fl GlobFlags
		if q {
			fl = GlobQuestion
		}
		if got, want := MatchGlob([]byte(g), []byte(k), fl), globRef([]byte(g), []byte(k), fl); got != want {
			t.Fatalf("MatchGlob(%q, %q, %d) = %v, want %v", g, k, fl, got, want)
		}
	})
}

// globChars splits b into the characters of the syntax f: single bytes
// without GlobQuestion; with it, valid UTF-8 encodings and the bytes that
// start none.
func globChars(b []byte, f GlobFlags) [][]byte {
	var out [][]byte
	for len(b) > 0 {
		n := 1
		if f&GlobQuestion != 0 {
			_, n = utf8.DecodeRune(b)
		}
		out, b = append(out, b[:n]), b[n:]
	}
	return out
}

// globRef is a glob match by dynamic programming over characters, slow
// but plainly right: m[i][j] says whether g[i:] matches k[j:].
func globRef(glob, key []byte, f GlobFlags) bool {
	g, k := globChars(glob, f), globChars(key, f)
	m := make([][]bool, len(g)+1)
	for i := range m {
		m[i] = make([]bool, len(k)+1)
	}
	m[len(g)][len(k)] = true
	for i := len(g) - 1; i >= 0; i-- {
		for j := len(k); j >= 0; j-- {
			switch {
			case string(g[i]) == "*":
				m[i][j] = m[i+1][j] || j < len(k) && m[i][j+1]
			case string(g[i]) == "?" && f&GlobQuestion != 0:
				m[i][j] = j < len(k) && m[i+1][j+1]
			default:
				m[i][j] = j < len(k) && bytes.Equal(g[i], k[j]) && m[i+1][j+1]
			}
		}
	}
	return m[0][0]
}

// The glob syntaxes as the docs state them: '?' one character, a byte
// that starts no character being one; '?' itself in the first syntax;
// literal characters, anchors and ranks.
func TestGlobQuestion(t *testing.T) {
	for _, c := range []struct {
		g, k     string
		q, plain bool // with GlobQuestion, without
	}{
		{"db-??", "db-01", true, false},
		{"db-??", "db-1", false, false},
		{"db-??", "db-??", true, true},
		{"?", "é", true, false},
		{"?", "\xff", true, false},
		{"??", "é", false, false},
		{"??", "??", true, true},
		{"*?*?", "\U0001d11e", false, false}, // one character, however '*' splits it
		{"\xc3*", "é", false, true},          // a byte that starts no character is one
		{"a?c", "a?c", true, true},
		{"a?c", "abc", true, false},
		{"*?", "", false, false},
	} {
		if got := MatchGlob([]byte(c.g), []byte(c.k), GlobQuestion); got != c.q {
			t.Errorf("MatchGlob(%q, %q, GlobQuestion) = %v", c.g, c.k, got)
		}
		if got := MatchGlob([]byte(c.g), []byte(c.k), 0); got != c.plain {
			t.Errorf("MatchGlob(%q, %q, 0) = %v", c.g, c.k, got)
		}
	}
	if n := WildcardLiterals([]byte("a?é*"), GlobQuestion); n != 2 {
		t.Errorf("literal characters of a?é* = %d, want 2", n)
	}
	if n := WildcardLiterals([]byte("a?é*"), 0); n != 3 {
		t.Errorf("literal characters of a?é* without '?' = %d, want 3", n)
	}
	if a := WildcardAnchor([]byte("web-??.corp*x"), GlobQuestion); string(a) != ".corp" {
		t.Errorf("anchor of web-??.corp*x = %q, want .corp", a)
	}
	if a := WildcardAnchor([]byte("web-??.corp*x"), 0); string(a) != "web-??.corp" {
		t.Errorf("anchor of web-??.corp*x without '?' = %q", a)
	}
	if a := WildcardAnchor([]byte("??*?"), GlobQuestion); a != nil {
		t.Errorf("anchor of ??*? = %q, want none", a)
	}
	rows := WildcardRows([][]byte{[]byte("a*c"), []byte("a?c"), []byte("abc")}, []uint64{0, 8, 16}, GlobQuestion)
	if got := []uint64{rows[0].Off, rows[1].Off, rows[2].Off}; !slices.Equal(got, []uint64{16, 0, 8}) {
		t.Errorf("ranks of a*c, a?c, abc = %v, want abc, then a*c and a?c in source order", got)
	}
	b := AppendLiteralIndexFlags(nil, uint64(GlobQuestion), rows)
	if x, err := DecodeLiteralIndex(b, 0, 3); err != nil || x.Flags != uint64(GlobQuestion) {
		t.Fatalf("flags: %v, %v", x, err)
	}
	b[48] = 2
	if _, err := DecodeLiteralIndex(b, 0, 3); err == nil || !strings.Contains(err.Error(), "flags") {
		t.Fatalf("unknown flag: %v", err)
	}
}

// The automaton finds every anchor a key contains, at every place, as a
// scan of every anchor would.
func TestLiteralAnchorsComplete(t *testing.T) {
	anchors := []string{"he", "she", "his", "hers", "a", "ab", "bab", "abab", "é", "x.y"}
	var rows []LiteralRow
	for i, a := range anchors {
		if a != "é" {
			a = strings.ToUpper(a) // the index lowers ASCII
		}
		rows = append(rows, LiteralRow{Off: uint64(8 * i), Anchors: [][]byte{[]byte(a)}})
	}
	rows = append(rows, LiteralRow{Off: 8 * 10}) // always checked
	b := AppendLiteralIndex(nil, rows)
	x, err := DecodeLiteralIndex(b, 0, uint64(len(rows)))
	if err != nil {
		t.Fatal(err)
	}
	sorted := slices.Sorted(slices.Values(anchors))
	for _, k := range []string{"ushers", "HISHERS", "abababx.y", "é", "", "zzz", "babab"} {
		var want []uint32
		for id, a := range sorted {
			for i := range len(k) {
				if strings.HasPrefix(strings.ToLower(k[i:]), a) {
					want = append(want, uint32(id))
				}
			}
		}
		got := x.Anchors(nil, []byte(k))
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("Anchors(%q) = %v; want %v", k, got, want)
		}
		cand, _ := x.Candidates(nil, nil, []byte(k))
		if len(cand) == 0 || cand[len(cand)-1] != 10 {
			t.Errorf("Candidates(%q) = %v lacks the row without an anchor", k, cand)
		}
	}
	if !bytes.Equal(b, AppendLiteralIndex(nil, rows)) {
		t.Fatal("the section is not deterministic")
	}
}

// The anchors docs/matching.md names for its user-agent list, and those
// of patterns it says have none.
func TestPatternAnchorsDoc(t *testing.T) {
	for p, want := range map[string]string{
		`(?i)googlebot|bingbot|duckduckbot`: "[googlebot bingbot duc]",
		`^curl/\d+`:                         "[curl/]",
		`^Mozilla/5\.0 .*\bEdg/\d+`:         "[mozilla/5.0 ]",
		`(?i)bot|crawl|spider`:              "[bot crawl pider]",
		`(foo|bar)+baz`:                     "[baz]",
		`(foo|bar)+ba`:                      "[foo bar]",
		`^\d+$`:                             "[]",
		`.*`:                                "[]",
		`[a-z]{3}`:                          "[]",
		`web-*`:                             "[web]",
	} {
		a, err := PatternAnchors([]byte(p))
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.ToLower(fmt.Sprintf("%s", a)); got != want { // the index lowers ASCII
			t.Errorf("PatternAnchors(%q) = %s; want %s", p, got, want)
		}
	}
}
