package reader_test

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/lutkit/lutkit/compile"
	"github.com/lutkit/lutkit/format"
	"github.com/lutkit/lutkit/reader"
)

// naiveRow is a row of a differential test: its id (its index in the
// source), key, and inclusive bounds.
type naiveRow struct {
	id     int
	key    string
	lo, hi int64
}

// naiveMatch returns the ids of the rows of key that hold x, in the
// order of policy: a scan of every row.
func naiveMatch(rows []naiveRow, key string, x int64, policy string) []string {
	var m []naiveRow
	for _, r := range rows {
		if r.key == key && r.lo <= x && x <= r.hi {
			m = append(m, r)
		}
	}
	slices.SortFunc(m, func(a, b naiveRow) int {
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

func idsOf(vs []reader.View, col int) []string {
	ids := make([]string, len(vs))
	for i, v := range vs {
		ids[i] = string(v.Col(col))
	}
	return ids
}

// randomRanges returns n ranges in [0, 200]: with overlaps, nested and
// touching ones; without, disjoint ranges that often touch.
func randomRanges(r *rand.Rand, n int, overlap bool) []naiveRow {
	rows := make([]naiveRow, 0, n)
	if overlap {
		for i := range n {
			lo := r.Int64N(200)
			hi := lo + r.Int64N(40)
			if i > 0 && r.IntN(4) == 0 { // touch or nest in the previous one
				p := rows[r.IntN(len(rows))]
				if r.IntN(2) == 0 {
					lo, hi = p.hi+1, p.hi+1+r.Int64N(10)
				} else {
					lo, hi = p.lo, p.lo+(p.hi-p.lo)/2
				}
			}
			rows = append(rows, naiveRow{id: i, lo: lo, hi: hi})
		}
		return rows
	}
	at := int64(r.IntN(5))
	for i := range n {
		lo := at + r.Int64N(3) // 0: touches the previous range
		hi := lo + r.Int64N(8)
		rows = append(rows, naiveRow{id: i, lo: lo, hi: hi})
		at = hi + 1
	}
	r.Shuffle(len(rows), func(i, j int) { rows[i], rows[j] = rows[j], rows[i] })
	for i := range rows {
		rows[i].id = i
	}
	return rows
}

func TestRangeDifferential(t *testing.T) {
	differential(t)
	for _, policy := range []string{"", "narrowest", "first"} {
		for seed := range uint64(30) {
			r := rand.New(rand.NewPCG(seed, 7))
			rows := randomRanges(r, 1+r.IntN(60), policy != "")
			data := make([][]string, len(rows))
			for i, row := range rows {
				data[i] = []string{strconv.FormatInt(row.lo, 10), strconv.FormatInt(row.hi, 10), strconv.Itoa(row.id)}
			}
			tbl, _ := build(t, rowsOf([]string{"from", "to", "id"}, data...),
				compile.Options{Match: compile.MatchRange, RangeColumns: []string{"from", "to"}, Overlap: policy})
			if tbl.Rows() != len(rows) || tbl.MatchKind() != format.MatchRange {
				t.Fatalf("table of %d rows (%s), want %d range rows", tbl.Rows(), tbl.MatchKind(), len(rows))
			}
			if err := tbl.Verify(); err != nil {
				t.Fatal(err)
			}
			out := make([]reader.View, 64)
			var row reader.Row
			for x := int64(-3); x <= 260; x++ {
				want := naiveMatch(rows, "", x, policy)
				got := idsOf(out[:tbl.MatchRange(x, out)], 2)
				if !slices.Equal(got, want) {
					t.Fatalf("policy %q seed %d: MatchRange(%d) = %v, the scan gives %v", policy, seed, x, got, want)
				}
				v, ok := tbl.LookupRange(x)
				if ok != (len(want) > 0) || ok && string(v.Col(2)) != want[0] {
					t.Fatalf("policy %q seed %d: LookupRange(%d) = %q %v, want %v", policy, seed, x, v.Col(2), ok, want)
				}
				ok = tbl.Get([]byte(strconv.FormatInt(x, 10)), &row)
				if ok != (len(want) > 0) || ok && string(row.Col(2)) != want[0] {
					t.Fatalf("Get(%d) = %q %v, want %v", x, row.Col(2), ok, want)
				}
			}
		}
	}
}

func TestRangeOverlapRefused(t *testing.T) {
	src := rowsOf([]string{"from", "to", "name"}, []string{"0", "1023", "system"}, []string{"2000", "3000", "x"}, []string{"443", "443", "https"})
	opts := compile.Options{Match: compile.MatchRange, RangeColumns: []string{"from", "to"}, SourceName: "ports.csv"}
	_, err := compile.File(src, t.TempDir()+"/p.lut", opts)
	if err == nil || !strings.Contains(err.Error(), "ports.csv:4:1:") || !strings.Contains(err.Error(), "ports.csv:2:1") {
		t.Fatalf("overlapping ranges: %v, want both rows' file:line:column", err)
	}
	for _, bad := range [][]string{{"5", "4", "x"}, {"a", "4", "x"}, {"1", "", "x"}} {
		_, err := compile.File(rowsOf([]string{"from", "to", "name"}, bad), t.TempDir()+"/p.lut", opts)
		if err == nil || !strings.Contains(err.Error(), "ports.csv:2:") {
			t.Fatalf("row %q: %v, want a row error", bad, err)
		}
	}
}

// TestTimeDifferential checks lookups of time-bounded tables against a
// scan, on random leases of a few keys that often end and start at the
// same second, some with open ends.
func TestTimeDifferential(t *testing.T) {
	differential(t)
	for _, policy := range []string{"", "narrowest", "first"} {
		for seed := range uint64(30) {
			r := rand.New(rand.NewPCG(seed, 11))
			var rows []naiveRow
			var data [][]string
			for k := range 1 + r.IntN(8) {
				key := fmt.Sprintf("10.0.0.%d", k)
				at := int64(1000 + r.IntN(10))
				for range 1 + r.IntN(8) {
					from := at
					if policy != "" && r.IntN(3) == 0 {
						from -= r.Int64N(20) // overlaps the previous lease
					} else {
						from += r.Int64N(3) // 0: starts when the previous ends
					}
					to := from + 1 + r.Int64N(30)
					fs, ts := strconv.FormatInt(from, 10), strconv.FormatInt(to, 10)
					lo, hi := from, to-1
					if len(rows) > 0 && rows[len(rows)-1].key != key && r.IntN(5) == 0 {
						fs, lo = "", -1<<63 // open start
					}
					if r.IntN(4) == 0 {
						ts = timeText(to) // RFC 3339
					}
					if r.IntN(10) == 0 {
						ts, hi = "", 1<<63-1 // still held
					}
					rows = append(rows, naiveRow{id: len(rows), key: key, lo: lo, hi: hi})
					data = append(data, []string{key, fs, ts, strconv.Itoa(len(data))})
					at = to
					if ts == "" {
						break
					}
				}
			}
			perm := r.Perm(len(rows))
			shuffled := make([][]string, len(rows))
			srows := make([]naiveRow, len(rows))
			for i, p := range perm {
				shuffled[i] = data[p]
				shuffled[i][3] = strconv.Itoa(i)
				srows[i] = rows[p]
				srows[i].id = i
			}
			tbl, _ := build(t, rowsOf([]string{"ip", "start", "end", "id"}, shuffled...),
				compile.Options{Key: []string{"ip"}, ValidFrom: "start", ValidTo: "end", Overlap: policy})
			if err := tbl.Verify(); err != nil {
				t.Fatal(err)
			}
			if tbl.Rows() != len(rows) || !tbl.TimeBounded() {
				t.Fatalf("table of %d rows (%s), want %d time rows", tbl.Rows(), tbl.MatchKind(), len(rows))
			}
			out := make([]reader.View, 16)
			var row reader.Row
			for k := range 10 {
				key := fmt.Sprintf("10.0.0.%d", k)
				for x := int64(900); x <= 1400; x++ {
					want := naiveMatch(srows, key, x, policy)
					got := idsOf(out[:tbl.MatchAt([]byte(key), x, out)], 3)
					if !slices.Equal(got, want) {
						t.Fatalf("policy %q seed %d: MatchAt(%s, %d) = %v, the scan gives %v", policy, seed, key, x, got, want)
					}
					ok := tbl.GetAt([]byte(key), x, &row)
					if ok != (len(want) > 0) || ok && string(row.Col(3)) != want[0] {
						t.Fatalf("GetAt(%s, %d) = %q %v, want %v", key, x, row.Col(3), ok, want)
					}
				}
			}
		}
	}
}

func timeText(sec int64) string {
	return fmt.Sprintf("1970-01-01T00:%02d:%02dZ", sec/60, sec%60)
}

func TestLeaseHandOver(t *testing.T) {
	tbl, _ := build(t, rowsOf([]string{"ip", "start", "end", "user"},
		[]string{"10.1.2.3", "2026-03-01T08:00:00Z", "2026-03-01T12:00:00Z", "ann"},
		[]string{"10.1.2.3", "2026-03-01T12:00:00Z", "", "bob"}),
		compile.Options{Key: []string{"ip"}, ValidFrom: "start", ValidTo: "end"})
	noon := int64(1772366400) // 2026-03-01T12:00:00Z
	for _, c := range []struct {
		at   int64
		want string
	}{{noon - 4*3600 - 1, ""}, {noon - 4*3600, "ann"}, {noon - 1, "ann"}, {noon, "bob"}, {noon + 1e9, "bob"}} {
		v, ok := tbl.LookupAt([]byte("10.1.2.3"), c.at)
		if got := string(v.Col(3)); ok != (c.want != "") || got != c.want {
			t.Errorf("at %d: %q %v, want %q", c.at, got, ok, c.want)
		}
	}
	_, err := compile.File(rowsOf([]string{"ip", "start", "end", "user"},
		[]string{"10.1.2.3", "100", "201", "ann"}, []string{"10.1.2.3", "200", "", "bob"}), t.TempDir()+"/l.lut",
		compile.Options{Key: []string{"ip"}, ValidFrom: "start", ValidTo: "end", SourceName: "leases.csv"})
	if err == nil || !strings.Contains(err.Error(), "leases.csv:3:2:") || !strings.Contains(err.Error(), "leases.csv:2:2") {
		t.Fatalf("overlapping leases: %v, want both rows' file:line:column", err)
	}
}

func TestRangeAndTimeDoNotAllocate(t *testing.T) {
	rt, _ := build(t, rowsOf([]string{"from", "to", "name"}, []string{"0", "1023", "system"}, []string{"1024", "49151", "registered"}),
		compile.Options{Match: compile.MatchRange, RangeColumns: []string{"from", "to"}})
	lt, _ := build(t, rowsOf([]string{"ip", "start", "end", "user"}, []string{"10.1.2.3", "100", "200", "ann"}),
		compile.Options{Key: []string{"ip"}, ValidFrom: "start", ValidTo: "end"})
	var row reader.Row
	out := make([]reader.View, 4)
	key := []byte("10.1.2.3")
	n := testing.AllocsPerRun(1000, func() {
		if !rt.GetRange(443, &row) || !lt.GetAt(key, 150, &row) || lt.MatchAt(key, 150, out) != 1 || rt.MatchRange(2000, out) != 1 ||
			rt.Match([]byte("443"), out) != 1 || string(out[0].Col(2)) != "system" {
			t.Fatal("a lookup failed")
		}
	})
	if n != 0 {
		t.Fatalf("%v allocations per lookup", n)
	}
}
