package reader_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/lutkit/lutkit/compile"
	"github.com/lutkit/lutkit/format"
	"github.com/lutkit/lutkit/reader"
)

// suffixTable compiles rows of domain,id into a suffix table.
func suffixTable(t testing.TB, rows ...[]string) *reader.Table {
	t.Helper()
	tbl, _ := build(t, rowsOf([]string{"domain", "id"}, rows...), compile.Options{Key: []string{"domain"}, Match: "suffix"})
	return tbl
}

func TestSuffixSemantics(t *testing.T) {
	tbl := suffixTable(t,
		[]string{"*.Evil.com", "evil"},
		[]string{"bad.evil.com", "bad"},
		[]string{".example.org", "example"},
		[]string{"co.uk", "couk"},
	)
	if tbl.MatchKind() != format.MatchSuffix || !tbl.FoldCase() {
		t.Fatalf("match %s, fold %v", tbl.MatchKind(), tbl.FoldCase())
	}
	for _, c := range []struct{ key, want string }{
		{"evil.com", "evil"},
		{"EVIL.COM", "evil"},
		{"a.b.evil.com", "evil"},
		{"a.b.evil.com.", "evil"}, // a fully qualified name
		{"bad.evil.com", "bad"},
		{"x.Bad.evil.com", "bad"},
		{"notevil.com", ""},
		{"evil.com.au", ""},
		{"com", ""},
		{"example.org", "example"},
		{"www.example.org", "example"},
		{"foo.co.uk", "couk"},
		{"uk", ""},
		{"", ""},
		{".", ""},
	} {
		var row reader.Row
		ok := tbl.Get([]byte(c.key), &row)
		got := ""
		if ok {
			got = string(row.Col(1))
		}
		if got != c.want || ok != (c.want != "") {
			t.Errorf("Get(%q) = %q, %v; want %q", c.key, got, ok, c.want)
		}
		v, ok := tbl.Lookup([]byte(c.key))
		if string(v.Col(1)) != c.want || ok != (c.want != "") {
			t.Errorf("Lookup(%q) = %q, %v; want %q", c.key, v.Col(1), ok, c.want)
		}
	}
	out := make([]reader.View, 4)
	n := tbl.Match([]byte("x.bad.EVIL.com"), out)
	if n != 2 || string(out[0].Col(1)) != "bad" || string(out[1].Col(1)) != "evil" {
		t.Fatalf("Match gave %d rows: %q, %q", n, out[0].Col(1), out[1].Col(1))
	}
	// MatchAt ignores the time of a table that is not time-bounded, and
	// answers every match as Match does.
	if n := tbl.MatchAt([]byte("x.bad.EVIL.com"), 0, out); n != 2 || string(out[0].Col(1)) != "bad" || string(out[1].Col(1)) != "evil" {
		t.Fatalf("MatchAt gave %d rows: %q, %q", n, out[0].Col(1), out[1].Col(1))
	}
	if n := tbl.Match([]byte("x.bad.evil.com"), out[:1]); n != 1 || string(out[0].Col(1)) != "bad" {
		t.Fatalf("Match with room for one gave %d rows, %q", n, out[0].Col(1))
	}
	// The stored key is the normalised one; the row keeps the source's.
	v, ok := tbl.LookupStored([]byte("evil.com"))
	if !ok || string(v.Key()) != "evil.com" || string(v.Col(0)) != "*.Evil.com" {
		t.Fatalf("LookupStored(evil.com) = %q %q %v", v.Key(), v.Col(0), ok)
	}
	if _, ok := tbl.LookupStored([]byte("a.evil.com")); ok {
		t.Fatal("LookupStored matched a suffix")
	}
	if err := tbl.Verify(); err != nil {
		t.Fatal(err)
	}
}

func TestSuffixCompileErrors(t *testing.T) {
	for _, c := range []struct {
		key  string
		want string
	}{
		{"", "empty domain suffix"},
		{"*.", "empty domain suffix"},
		{"a..b", "empty label"},
		{"web-*.com", "'*'"},
		{"*evil.com", "'*'"},
	} {
		src := rowsOf([]string{"domain", "id"}, []string{"ok.com", "1"}, []string{c.key, "2"})
		_, err := compile.Write(src, tempFile(t), compile.Options{Key: []string{"domain"}, Match: "suffix", SourceName: "ioc.csv"})
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "ioc.csv:3:1:") {
			t.Errorf("key %q: error %v, want %q at ioc.csv:3:1", c.key, err, c.want)
		}
	}
	// *.evil.com and evil.com are one key.
	src := rowsOf([]string{"domain", "id"}, []string{"*.evil.com", "1"}, []string{"EVIL.com", "2"})
	if _, err := compile.Write(src, tempFile(t), compile.Options{Key: []string{"domain"}, Match: "suffix"}); err == nil || !strings.Contains(err.Error(), "duplicate key") {
		t.Errorf("*.evil.com and EVIL.com: %v, want a duplicate key", err)
	}
	opts := compile.Options{Key: []string{"a", "b"}, Match: "suffix"}
	if err := opts.Validate(); err == nil || !strings.Contains(err.Error(), "one key column") {
		t.Errorf("composite suffix key: %v", err)
	}
	opts = compile.Options{Key: []string{"a"}, Match: "sufix"}
	if err := opts.Validate(); err == nil || !strings.Contains(err.Error(), "unknown match kind") {
		t.Errorf("unknown kind: %v", err)
	}
}

// domainGen draws names from small pools of labels, so that names share
// labels and suffixes: evil.com, notevil.com, a.evil.com, evil.com.au.
type domainGen struct{ r *rand.Rand }

var (
	tlds   = []string{"com", "org", "net", "uk", "au", "io"}
	middle = []string{"evil", "notevil", "co", "example", "bad", "cdn", "a", "b", "mail", "x-1"}
)

func (g domainGen) name(maxLabels int) string {
	n := 1 + g.r.IntN(maxLabels)
	parts := []string{tlds[g.r.IntN(len(tlds))]}
	for len(parts) < n {
		parts = append([]string{middle[g.r.IntN(len(middle))]}, parts...)
	}
	return strings.Join(parts, ".")
}

// decorate writes a normalised name as a source or a lookup may: in
// mixed case, with a leading "*." or "." (keys), a trailing "." (both).
func (g domainGen) decorate(name string, key bool) string {
	b := []byte(name)
	for i := range b {
		if g.r.IntN(4) == 0 && b[i] >= 'a' && b[i] <= 'z' {
			b[i] -= 'a' - 'A'
		}
	}
	s := string(b)
	if key {
		switch g.r.IntN(4) {
		case 0:
			s = "*." + s
		case 1:
			s = "." + s
		}
	}
	if g.r.IntN(5) == 0 {
		s += "."
	}
	return s
}

// naiveSuffix is the obvious implementation: a Go map of the suffixes,
// walked label by label from the whole name.
func naiveSuffix(m map[string]string, q string) []string {
	q = strings.ToLower(strings.TrimSuffix(q, "."))
	var out []string
	for {
		if v, ok := m[q]; ok {
			out = append(out, v)
		}
		i := strings.IndexByte(q, '.')
		if i < 0 {
			return out
		}
		q = q[i+1:]
	}
}

// Random tables of names that share labels, against the naive map walk:
// Get, Lookup, LookupBatch and Match give its answers.
func TestSuffixDifferential(t *testing.T) {
	differential(t)
	for seed := uint64(1); seed <= 20; seed++ {
		g := domainGen{rand.New(rand.NewPCG(seed, 3))}
		naive := map[string]string{}
		var rows [][]string
		for len(rows) < 1+g.r.IntN(300) {
			name := g.name(1 + g.r.IntN(4))
			if _, dup := naive[name]; dup {
				continue
			}
			id := strconv.Itoa(len(rows))
			naive[name] = id
			rows = append(rows, []string{g.decorate(name, true), id})
		}
		tbl := suffixTable(t, rows...)
		if err := tbl.Verify(); err != nil {
			t.Fatal(err)
		}
		var keys [][]byte
		for range 2000 {
			keys = append(keys, []byte(g.decorate(g.name(6), false)))
		}
		batch := make([]reader.View, len(keys))
		found := tbl.LookupBatch(keys, batch)
		counted := 0
		out := make([]reader.View, 8)
		var row reader.Row
		for i, k := range keys {
			want := naiveSuffix(naive, string(k))
			first := ""
			if len(want) > 0 {
				first = want[0]
				counted++
			}
			if ok := tbl.Get(k, &row); ok != (first != "") || (ok && string(row.Col(1)) != first) {
				t.Fatalf("seed %d: Get(%q) = %q, %v; want %q", seed, k, row.Col(1), ok, first)
			}
			if string(batch[i].Col(1)) != first {
				t.Fatalf("seed %d: LookupBatch(%q) = %q; want %q", seed, k, batch[i].Col(1), first)
			}
			n := tbl.Match(k, out)
			var got []string
			for _, v := range out[:n] {
				got = append(got, string(v.Col(1)))
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("seed %d: Match(%q) = %q; want %q", seed, k, got, want)
			}
		}
		if found != counted {
			t.Fatalf("seed %d: LookupBatch found %d, the naive walk %d", seed, found, counted)
		}
	}
}

func TestSuffixLookupDoesNotAllocate(t *testing.T) {
	tbl := suffixTable(t, []string{"evil.com", "1"}, []string{"b.example.org", "2"})
	checkNoAllocs(t, tbl, "evil.com", []byte("a.b.EVIL.com"), []byte("www.b.example.org."), []byte("nope.net"))
}

// Records walks the live rows of a suffix table, by their stored keys.
func TestSuffixRecords(t *testing.T) {
	tbl, _ := build(t, rowsOf([]string{"domain", "id"}, []string{"evil.com", "1"}, []string{"*.EVIL.com", "2"}, []string{"a.evil.com", "3"}),
		compile.Options{Key: []string{"domain"}, Match: "suffix", OnDuplicate: compile.DuplicateLast})
	var got []string
	if err := tbl.Records(func(v reader.View) bool { got = append(got, string(v.Col(1))); return true }); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != "[2 3]" {
		t.Fatalf("records %q, want the last evil.com and a.evil.com", got)
	}
}

// A damaged SUFFIX section or a header that disagrees with it is an
// error at open or in Verify, never a wrong answer taken for right.
func TestSuffixCorruption(t *testing.T) {
	_, path := build(t, rowsOf([]string{"domain", "id"}, []string{"evil.com", "1"}, []string{"a.b.c.org", "2"}),
		compile.Options{Key: []string{"domain"}, Match: "suffix"})
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := reader.OpenBytes(good)
	if err != nil {
		t.Fatal(err)
	}
	s := sectionOf(t, tbl, format.SectionSuffix)
	// A flipped bit of the label mask: Verify's checksum catches it.
	b := bytes.Clone(good)
	b[s.Off+8] ^= 0x08
	if tb, err := reader.OpenBytes(b); err == nil {
		if err := tb.Verify(); err == nil {
			t.Fatal("Verify accepted a damaged SUFFIX section")
		}
	}
	// The header without FeatureSuffix (re-checksummed): the SUFFIX
	// section no longer agrees.
	h := tbl.Header()
	h.Incompat &^= format.FeatureSuffix
	b = bytes.Clone(good)
	h.Encode(b)
	if _, err := reader.OpenBytes(b); err == nil || !strings.Contains(err.Error(), "SUFFIX") {
		t.Fatalf("a suffix table without its feature bit opened: %v", err)
	}
}

func sectionOf(t *testing.T, tbl *reader.Table, kind uint32) format.Section {
	t.Helper()
	for _, s := range tbl.Sections() {
		if s.Kind == kind {
			return s
		}
	}
	t.Fatalf("no %s section", format.SectionName(kind))
	return format.Section{}
}

// FuzzSuffixLookup looks arbitrary names up in a small suffix table and
// checks every answer against the naive map walk.
func FuzzSuffixLookup(f *testing.F) {
	naive := map[string]string{"evil.com": "1", "b.evil.com": "2", "co.uk": "3", "a.b.c.d.e": "4", "x": "5"}
	var rows [][]string
	for k, v := range naive {
		rows = append(rows, []string{k, v})
	}
	tbl := suffixTable(f, rows...)
	for _, s := range []string{"evil.com", "a.b.evil.com.", "notevil.com", "B.c.d.e", "x", ".", "", "a..x", "É.co.uk"} {
		f.Add(s)
	}
	out := make([]reader.View, 8)
	f.Fuzz(func(t *testing.T, q string) {
		for _, c := range q {
			if c >= 0x80 {
				return // the naive walk folds ASCII only
			}
		}
		want := naiveSuffix(naive, q)
		n := tbl.Match([]byte(q), out)
		var got []string
		for _, v := range out[:n] {
			got = append(got, string(v.Col(1)))
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("Match(%q) = %q; want %q", q, got, want)
		}
	})
}

// tempFile returns a new empty file, closed at the end of the test.
func tempFile(t *testing.T) *os.File {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "t.lut")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// Every byte of a small suffix table flipped in turn, and every cut.
func TestSuffixEveryByteFlipped(t *testing.T) {
	var rows [][]string
	var keys [][]byte
	for i := range 30 {
		rows = append(rows, []string{fmt.Sprintf("h%d.Zone%d.example", i, i%4), strconv.Itoa(i)})
		keys = append(keys, fmt.Appendf(nil, "www.h%d.zone%d.example", i, i%4))
	}
	_, path := build(t, rowsOf([]string{"domain", "id"}, rows...), compile.Options{Key: []string{"domain"}, Match: "suffix"})
	checkDamage(t, path, keys)
}
