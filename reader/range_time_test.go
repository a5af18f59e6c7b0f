package reader_test

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lutkit/lutkit/compile"
	"github.com/lutkit/lutkit/format"
	"github.com/lutkit/lutkit/reader"
)

// boxRow is a row of a range table bounded in time: its id (its index in
// the source), inclusive range and inclusive validity [vlo, vhi].
type boxRow struct {
	id       int
	lo, hi   int64
	vlo, vhi int64
}

// boxMatch returns the ids of the rows whose range holds x and whose
// validity holds at, in the order of policy: a scan of every row.
func boxMatch(rows []boxRow, x, at int64, policy string) []string {
	var m []boxRow
	for _, r := range rows {
		if r.lo <= x && x <= r.hi && r.vlo <= at && at <= r.vhi {
			m = append(m, r)
		}
	}
	slices.SortFunc(m, func(a, b boxRow) int {
		if policy == "narrowest" {
			if c := cmp.Compare(uint64(a.hi-a.lo), uint64(b.hi-b.lo)); c != 0 {
				return c
			}
		}
		return cmp.Compare(a.id, b.id)
	})
	ids := make([]string, len(m))
	for i, r := range m {
		ids[i] = strconv.Itoa(r.id)
	}
	return ids
}

// randomBoxes returns n rows over ranges of [0, 200] (touching and
// nested ones) and validities around [1000, 1400]. Without overlap
// (policy ""), rows whose ranges overlap get validities that follow each
// other, each lease ending the second the next starts; with overlap,
// validities overlap at random, open ends included.
func randomBoxes(r *rand.Rand, n int, overlap bool) ([]boxRow, [][]string) {
	ranges := randomRanges(r, n, true)
	rows := make([]boxRow, len(ranges))
	data := make([][]string, len(ranges))
	at := int64(1000)
	for i, rg := range ranges {
		b := boxRow{id: i, lo: rg.lo, hi: rg.hi}
		var from, to string
		if overlap {
			vlo := 1000 + r.Int64N(300)
			vhi := vlo + 1 + r.Int64N(100)
			from, to = strconv.FormatInt(vlo, 10), strconv.FormatInt(vhi, 10)
			b.vlo, b.vhi = vlo, vhi-1
			switch r.IntN(8) {
			case 0:
				from, b.vlo = "", -1<<63
			case 1:
				to, b.vhi = "", 1<<63-1
			}
		} else {
			d := 1 + r.Int64N(5)
			from, to = strconv.FormatInt(at, 10), strconv.FormatInt(at+d, 10)
			b.vlo, b.vhi = at, at+d-1
			if r.IntN(3) == 0 {
				to = time.Unix(at+d, 0).UTC().Format(time.RFC3339) // RFC 3339 and epoch mixed
			}
			at += d // the next lease starts when this one ends
		}
		rows[i] = b
		data[i] = []string{strconv.FormatInt(b.lo, 10), strconv.FormatInt(b.hi, 10), from, to, strconv.Itoa(i)}
	}
	return rows, data
}

// TestRangeTimeDifferential compares a range table bounded in time with a
// scan of its rows, for every integer and second around them: MatchAt,
// MatchRangeAt, LookupRangeAt, LookupAt and GetAt.
func TestRangeTimeDifferential(t *testing.T) {
	differential(t)
	for _, policy := range []string{"", "narrowest", "first"} {
		for seed := range uint64(25) {
			r := rand.New(rand.NewPCG(seed, 13))
			rows, data := randomBoxes(r, 1+r.IntN(40), policy != "")
			tbl, _ := build(t, rowsOf([]string{"from", "to", "start", "end", "id"}, data...),
				compile.Options{Match: compile.MatchRange, RangeColumns: []string{"from", "to"}, ValidFrom: "start", ValidTo: "end", Overlap: policy})
			if tbl.Rows() != len(rows) || tbl.MatchKind() != format.MatchRange || !tbl.TimeBounded() {
				t.Fatalf("table of %d rows (%s, time-bounded %v), want %d range rows bounded in time", tbl.Rows(), tbl.MatchKind(), tbl.TimeBounded(), len(rows))
			}
			if want := policy; tbl.Overlap() != cmp.Or(want, "error") {
				t.Fatalf("overlap %q, want %q", tbl.Overlap(), policy)
			}
			if err := tbl.Verify(); err != nil {
				t.Fatal(err)
			}
			out := make([]reader.View, 64)
			var row reader.Row
			for x := int64(-2); x <= 250; x += 1 + int64(r.IntN(3)) {
				key := []byte(strconv.FormatInt(x, 10))
				for at := int64(990); at <= 1420; at += 1 + int64(r.IntN(4)) {
					want := boxMatch(rows, x, at, policy)
					got := idsOf(out[:tbl.MatchRangeAt(x, at, out)], 4)
					if !slices.Equal(got, want) {
						t.Fatalf("policy %q seed %d: MatchRangeAt(%d, %d) = %v, the scan gives %v", policy, seed, x, at, got, want)
					}
					if got := idsOf(out[:tbl.MatchAt(key, at, out)], 4); !slices.Equal(got, want) {
						t.Fatalf("policy %q seed %d: MatchAt(%d, %d) = %v, the scan gives %v", policy, seed, x, at, got, want)
					}
					v, ok := tbl.LookupRangeAt(x, at)
					if ok != (len(want) > 0) || ok && string(v.Col(4)) != want[0] {
						t.Fatalf("policy %q seed %d: LookupRangeAt(%d, %d) = %q %v, want %v", policy, seed, x, at, v.Col(4), ok, want)
					}
					if v2, ok2 := tbl.LookupAt(key, at); ok2 != ok || ok && string(v2.Col(4)) != want[0] {
						t.Fatalf("LookupAt(%d, %d) = %q %v, want %v", x, at, v2.Col(4), ok2, want)
					}
					if ok := tbl.GetAt(key, at, &row); ok != (len(want) > 0) || ok && string(row.Col(4)) != want[0] {
						t.Fatalf("GetAt(%d, %d) = %q %v, want %v", x, at, row.Col(4), ok, want)
					}
				}
			}
		}
	}
}

// TestRangeTimeNow: without a time, a range table bounded in time answers
// at the current time (Get, Lookup, LookupRange, MatchRange, Match).
func TestRangeTimeNow(t *testing.T) {
	now := time.Now().Unix()
	tbl, _ := build(t, rowsOf([]string{"from", "to", "start", "end", "user"},
		[]string{"100", "199", "", strconv.FormatInt(now-10, 10), "old"},
		[]string{"100", "199", strconv.FormatInt(now-10, 10), "", "current"},
		[]string{"150", "150", "", "", "always"},
	), compile.Options{Match: compile.MatchRange, RangeColumns: []string{"from", "to"}, ValidFrom: "start", ValidTo: "end", Overlap: "narrowest"})
	var row reader.Row
	if !tbl.Get([]byte("120"), &row) || string(row.Col(4)) != "current" {
		t.Fatalf("Get(120) = %q", row.Col(4))
	}
	if v, ok := tbl.Lookup([]byte("150")); !ok || string(v.Col(4)) != "always" {
		t.Fatalf("Lookup(150) = %q", v.Col(4))
	}
	if v, ok := tbl.LookupRange(199); !ok || string(v.Col(4)) != "current" {
		t.Fatalf("LookupRange(199) = %q", v.Col(4))
	}
	out := make([]reader.View, 4)
	if got := idsOf(out[:tbl.MatchRange(150, out)], 4); !slices.Equal(got, []string{"always", "current"}) {
		t.Fatalf("MatchRange(150) = %v", got)
	}
	if got := idsOf(out[:tbl.Match([]byte("150"), out)], 4); !slices.Equal(got, []string{"always", "current"}) {
		t.Fatalf("Match(150) = %v", got)
	}
	if got := idsOf(out[:tbl.MatchAt([]byte("150"), now-11, out)], 4); !slices.Equal(got, []string{"always", "old"}) {
		t.Fatalf("MatchAt(150, now-11) = %v", got)
	}
	if _, ok := tbl.LookupRange(200); ok {
		t.Fatal("LookupRange(200) found a row")
	}
}

// TestRangeTimeOverlapRefused: under the error policy rows may share
// integers or seconds, not both; a row that does is refused with both
// rows' file:line:column.
func TestRangeTimeOverlapRefused(t *testing.T) {
	opts := compile.Options{Match: compile.MatchRange, RangeColumns: []string{"from", "to"}, ValidFrom: "start", ValidTo: "end", SourceName: "leases.csv"}
	ok := rowsOf([]string{"from", "to", "start", "end", "user"},
		[]string{"10", "20", "100", "200", "ann"},
		[]string{"15", "25", "200", "300", "bob"},  // shares integers with ann, not seconds
		[]string{"21", "30", "100", "200", "carl"}, // shares seconds with ann, not integers
	)
	if _, err := compile.File(ok, t.TempDir()+"/ok.lut", opts); err != nil {
		t.Fatalf("rows that overlap in one dimension only: %v", err)
	}
	bad := rowsOf([]string{"from", "to", "start", "end", "user"},
		[]string{"10", "20", "100", "200", "ann"},
		[]string{"15", "25", "200", "300", "bob"},
		[]string{"20", "20", "199", "", "dan"},
	)
	_, err := compile.File(bad, t.TempDir()+"/bad.lut", opts)
	if err == nil || !strings.Contains(err.Error(), "leases.csv:4:1: rows overlap in range and time: [20, 20] valid [199, open) of this row and [10, 20] valid [100, 200) of the row at leases.csv:2:1") {
		t.Fatalf("rows overlapping in both: %v", err)
	}
}

// TestRangeTimeDoesNotAllocate: lookups of a range table bounded in time
// do not allocate.
func TestRangeTimeDoesNotAllocate(t *testing.T) {
	tbl, _ := build(t, rowsOf([]string{"from", "to", "start", "end", "user"},
		[]string{"0", "1023", "100", "200", "ann"}, []string{"0", "1023", "200", "", "bob"}),
		compile.Options{Match: compile.MatchRange, RangeColumns: []string{"from", "to"}, ValidFrom: "start", ValidTo: "end"})
	var row reader.Row
	out := make([]reader.View, 4)
	key := []byte("443")
	n := testing.AllocsPerRun(1000, func() {
		if !tbl.GetAt(key, 150, &row) || tbl.MatchAt(key, 250, out) != 1 || tbl.MatchRangeAt(443, 150, out) != 1 || !tbl.Get(key, &row) {
			t.Fatal("a lookup failed")
		}
	})
	if n != 0 {
		t.Fatalf("%v allocations per lookup", n)
	}
}

// TestRangeTimeEveryByteFlipped: a range table bounded in time with any
// byte flipped, or cut short, fails to open or fails Verify, and its
// lookups do not panic.
func TestRangeTimeEveryByteFlipped(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 13))
	_, data := randomBoxes(r, 12, true)
	_, path := build(t, rowsOf([]string{"from", "to", "start", "end", "id"}, data...),
		compile.Options{Match: compile.MatchRange, RangeColumns: []string{"from", "to"}, ValidFrom: "start", ValidTo: "end", Overlap: "narrowest"})
	checkDamage(t, path, [][]byte{[]byte("5"), []byte("50"), []byte("150")})
}

// TestEmptyRangeAndTimeTables: a range table, a time-bounded table and a
// range table bounded in time of no rows compile, verify and find
// nothing.
func TestEmptyRangeAndTimeTables(t *testing.T) {
	for _, c := range []struct {
		header []string
		opts   compile.Options
	}{
		{[]string{"from", "to"}, compile.Options{Match: compile.MatchRange, RangeColumns: []string{"from", "to"}}},
		{[]string{"ip", "start", "end"}, compile.Options{Key: []string{"ip"}, ValidFrom: "start", ValidTo: "end"}},
		{[]string{"from", "to", "start", "end"}, compile.Options{Match: compile.MatchRange, RangeColumns: []string{"from", "to"}, ValidFrom: "start", ValidTo: "end"}},
	} {
		tbl, _ := build(t, rowsOf(c.header), c.opts)
		if err := tbl.Verify(); err != nil {
			t.Fatalf("%v: %v", c.header, err)
		}
		out := make([]reader.View, 2)
		if _, ok := tbl.LookupAt([]byte("1"), 1); ok || tbl.MatchAt([]byte("1"), 1, out) != 0 || tbl.Rows() != 0 {
			t.Fatalf("%v: an empty table found a row", c.header)
		}
	}
}
