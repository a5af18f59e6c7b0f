package format

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
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
	return [][]byte{AppendLiteralIndex(nil, WildcardRows(globs, offs)), AppendLiteralIndex(nil, rows), AppendLiteralIndex(nil, nil)}
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

// MatchGlob agrees with a plain recursive match, byte by byte.
func FuzzMatchGlob(f *testing.F) {
	for _, s := range []struct{ g, k string }{
		{"web-*", "web-01"}, {"*-db-*", "x-db-y"}, {"a*b*c", "aXbYbc"}, {"**", ""}, {"*a", "ba"}, {"a", "ab"},
	} {
		f.Add(s.g, s.k)
	}
	f.Fuzz(func(t *testing.T, g, k string) {
		if len(g) > 64 || len(k) > 256 {
			return
		}
		if got, want := MatchGlob([]byte(g), []byte(k)), globRef([]byte(g), []byte(k)); got != want {
			t.Fatalf("MatchGlob(%q, %q) = %v, want %v", g, k, got, want)
		}
	})
}

// globRef is a glob match by dynamic programming, slow but plainly
// right: m[i][j] says whether g[i:] matches k[j:].
func globRef(g, k []byte) bool {
	m := make([][]bool, len(g)+1)
	for i := range m {
		m[i] = make([]bool, len(k)+1)
	}
	m[len(g)][len(k)] = true
	for i := len(g) - 1; i >= 0; i-- {
		for j := len(k); j >= 0; j-- {
			if g[i] == '*' {
				m[i][j] = m[i+1][j] || j < len(k) && m[i][j+1]
			} else {
				m[i][j] = j < len(k) && g[i] == k[j] && m[i+1][j+1]
			}
		}
	}
	return m[0][0]
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
