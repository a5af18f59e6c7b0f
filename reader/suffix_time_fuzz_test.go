package reader_test

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/lutkit/lutkit/compile"
	"github.com/lutkit/lutkit/reader"
)

// timeKindRows are the rows of the fuzzed tables of each kind: keys that
// share labels, globs and literals, each with validities that touch,
// overlap (the tables rank them --overlap first) and have open ends.
var timeKindRows = map[string][]timedRow{
	"suffix": {
		{"evil.com", "", "100"}, {"*.evil.com", "100", "200"}, {"EVIL.com.", "150", ""},
		{"a.evil.com", "50", "150"}, {"b.a.evil.com", "", ""}, {"com", "120", "121"},
	},
	"wildcard": {
		{"web-*", "", "100"}, {"web-*", "100", "200"}, {"*-db-*", "150", ""},
		{"web-db-*", "50", "150"}, {"*", "120", "121"}, {"w*b*", "", ""},
	},
	"pattern": {
		{"^web", "", "100"}, {"^web", "100", "200"}, {`(?i)db\d`, "150", ""},
		{"web-(db|cache)", "50", "150"}, {".", "120", "121"}, {"^$", "", ""},
	},
}

var timeKindNames = []string{"suffix", "wildcard", "pattern"}

// naiveTimeKind returns the ids of the rows of kind that match q at x:
// the distinct keys in the kind's order, each key's valid rows in
// source order (--overlap first).
func naiveTimeKind(kind string, rows []timedRow, q string, x int64) []string {
	norm := func(k string) string {
		if kind != "suffix" {
			return k
		}
		return strings.TrimSuffix(strings.TrimPrefix(strings.ToLower(k), "*."), ".")
	}
	var nrows []naiveRow
	for i, r := range rows {
		lo, hi := int64(-1<<63), int64(1<<63-1)
		if r.from != "" {
			lo = mustInt(r.from)
		}
		if r.to != "" {
			hi = mustInt(r.to) - 1
		}
		nrows = append(nrows, naiveRow{id: i, key: norm(r.src), lo: lo, hi: hi})
	}
	keys := firstSeen(nrows)
	var match []string
	switch kind {
	case "suffix":
		for s := strings.ToLower(strings.TrimSuffix(q, ".")); ; {
			if slices.Contains(keys, s) {
				match = append(match, s)
			}
			i := strings.IndexByte(s, '.')
			if i < 0 {
				break
			}
			s = s[i+1:]
		}
	case "wildcard":
		// Most literal characters first: '*' and '?' are not.
		lit := func(g string) int { return utf8.RuneCountInString(g) - strings.Count(g, "*") - strings.Count(g, "?") }
		slices.SortStableFunc(keys, func(a, b string) int { return lit(b) - lit(a) })
		for _, k := range keys {
			if naiveGlob(k, false).MatchString(q) {
				match = append(match, k)
			}
		}
	case "pattern":
		for _, k := range keys {
			if regexp.MustCompile(k).MatchString(q) {
				match = append(match, k)
			}
		}
	}
	return naiveTimed(nrows, match, x, "first")
}

func mustInt(s string) int64 {
	n, ok := int64(0), true
	for _, c := range s {
		ok = ok && c >= '0' && c <= '9'
		n = 10*n + int64(c-'0')
	}
	if !ok {
		panic(s)
	}
	return n
}

// FuzzTimeKinds looks arbitrary keys up at arbitrary times in small
// suffix, wildcard and pattern tables bounded in time, and checks every
// answer against the scan.
func FuzzTimeKinds(f *testing.F) {
	tables := map[string]*reader.Table{}
	for _, kind := range timeKindNames {
		tables[kind] = timedTable(f, kind, false, "first", timeKindRows[kind])
	}
	for _, s := range []string{"x.b.a.evil.com", "EVIL.COM.", "web-db-1", "web-cache", "db7", "", "com", "wxb"} {
		for _, at := range []int64{-1 << 63, 0, 99, 100, 120, 149, 150, 199, 200, 1 << 62} {
			f.Add(uint8(len(s)), s, at)
		}
	}
	out := make([]reader.View, 8)
	f.Fuzz(func(t *testing.T, k uint8, q string, at int64) {
		kind := timeKindNames[int(k)%len(timeKindNames)]
		if kind == "suffix" && strings.ContainsFunc(q, func(r rune) bool { return r >= 0x80 }) {
			return // the scan folds ASCII only
		}
		want := naiveTimeKind(kind, timeKindRows[kind], q, at)
		got := idsOf(out[:tables[kind].MatchAt([]byte(q), at, out)], 3)
		if !slices.Equal(got, want) {
			t.Fatalf("%s: MatchAt(%q, %d) = %v, the scan gives %v", kind, q, at, got, want)
		}
	})
}

// FuzzTimeKindsOpen opens damaged suffix, wildcard and pattern tables
// bounded in time, and an IPv4 range table bounded in time: lookups at
// times, Records and Verify must not panic.
func FuzzTimeKindsOpen(f *testing.F) {
	_, ipPath := build(f, rowsOf([]string{"from", "to", "start", "end", "id"}, []string{"10.1.2.0", "10.1.2.255", "", "150", "a"},
		[]string{"10.1.2.0", "10.1.2.255", "150", "", "b"}, []string{"10.1.2.3", "10.1.3.0", "", "", "c"}),
		compile.Options{Match: compile.MatchRange, RangeColumns: []string{"from", "to"}, ValidFrom: "start", ValidTo: "end", Overlap: "first"})
	if b, err := os.ReadFile(ipPath); err == nil {
		f.Add(b)
	}
	for _, kind := range timeKindNames {
		src := make([][]string, len(timeKindRows[kind]))
		for i, r := range timeKindRows[kind] {
			src[i] = []string{r.src, r.from, r.to, string(rune('a' + i))}
		}
		_, path := build(f, rowsOf([]string{"key", "start", "end", "id"}, src...),
			compile.Options{Key: []string{"key"}, Match: kind, ValidFrom: "start", ValidTo: "end", Overlap: "first"})
		b, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tbl, err := reader.OpenBytes(data)
		if err != nil {
			return
		}
		out := make([]reader.View, 3)
		var row reader.Row
		for _, q := range []string{"x.b.a.evil.com", "web-db-1", "db7", "", "10.1.2.3"} {
			for _, at := range []int64{0, 120, 160} {
				tbl.MatchAt([]byte(q), at, out)
				tbl.GetAt([]byte(q), at, &row)
			}
			tbl.Match([]byte(q), out)
		}
		_ = tbl.Records(func(v reader.View) bool { v.Col(0); return true })
		_ = tbl.Verify()
	})
}
