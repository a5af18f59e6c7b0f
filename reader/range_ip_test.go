package reader_test

import (
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

// ipText writes the address of number n.
func ipText(n int64) string { return string(format.AppendIPv4(nil, uint32(n))) }

// TestRangeIPv4Differential: range tables whose from,to are IPv4
// addresses (random ranges of 10.0.0.0/23, touching and nested ones,
// with and without validities), looked up by addresses as text, against
// a scan of the rows: MatchAt, LookupAt, GetAt and Get.
func TestRangeIPv4Differential(t *testing.T) {
	differential(t)
	const base = 10 << 24
	for _, policy := range policies {
		for seed := range uint64(20) {
			r := rand.New(rand.NewPCG(seed, 29))
			timed := seed%2 == 1
			var nrows []naiveRow
			var boxes []boxRow
			var data [][]string
			if timed {
				rows, d := randomBoxes(r, 1+r.IntN(40), policy != "")
				boxes = rows
				for i, row := range d {
					row[0], row[1] = ipText(base+rows[i].lo), ipText(base+rows[i].hi)
				}
				data = d
			} else {
				nrows = randomRanges(r, 1+r.IntN(60), policy != "")
				for _, row := range nrows {
					data = append(data, []string{ipText(base + row.lo), ipText(base + row.hi), "", "", strconv.Itoa(row.id)})
				}
			}
			opts := compile.Options{Match: compile.MatchRange, RangeColumns: []string{"from", "to"}, Overlap: policy}
			if timed {
				opts.ValidFrom, opts.ValidTo = "start", "end"
			}
			tbl, _ := build(t, rowsOf([]string{"from", "to", "start", "end", "id"}, data...), opts)
			if tbl.Header().Incompat&format.FeatureRangeIPv4 == 0 || tbl.TimeBounded() != timed {
				t.Fatalf("an IPv4 range table without its feature bit (time-bounded %v)", tbl.TimeBounded())
			}
			if err := tbl.Verify(); err != nil {
				t.Fatal(err)
			}
			out := make([]reader.View, 64)
			var row reader.Row
			for x := int64(-2); x <= 250; x++ {
				key := []byte(ipText(base + x))
				for at := int64(990); at <= 1420; at += 1 + int64(r.IntN(40)) {
					var want []string
					if timed {
						want = boxMatch(boxes, x, at, policy)
					} else {
						want = naiveMatch(nrows, "", x, policy)
					}
					what := fmt.Sprintf("policy %q seed %d: %s at %d", policy, seed, key, at)
					if got := idsOf(out[:tbl.MatchAt(key, at, out)], 4); !slices.Equal(got, want) {
						t.Fatalf("%s: MatchAt = %v, the scan gives %v", what, got, want)
					}
					v, ok := tbl.LookupAt(key, at)
					if ok != (len(want) > 0) || ok && string(v.Col(4)) != want[0] {
						t.Fatalf("%s: LookupAt = %q %v, want %v", what, v.Col(4), ok, want)
					}
					if ok := tbl.GetAt(key, at, &row); ok != (len(want) > 0) || ok && string(row.Col(4)) != want[0] {
						t.Fatalf("%s: GetAt = %q %v, want %v", what, row.Col(4), ok, want)
					}
					if !timed {
						if ok := tbl.Get(key, &row); ok != (len(want) > 0) || ok && string(row.Col(4)) != want[0] {
							t.Fatalf("%s: Get = %q %v, want %v", what, row.Col(4), ok, want)
						}
						break // the time does not matter
					}
				}
				// The number of the address is not a key of an IPv4 table.
				if _, ok := tbl.LookupAt([]byte(strconv.FormatInt(base+x, 10)), 1000); ok {
					t.Fatalf("an IPv4 range table answered the integer %d", base+x)
				}
			}
		}
	}
}

// TestRangeIPv4Errors: a row whose bound is not an address (or an
// integer, when the first row gives addresses) is refused at its
// file:line:column; overlapping address ranges are named as addresses.
func TestRangeIPv4Errors(t *testing.T) {
	opts := compile.Options{Match: compile.MatchRange, RangeColumns: []string{"from", "to"}, SourceName: "nets.csv"}
	for _, c := range []struct {
		row  []string
		want string
	}{
		{[]string{"10.0.1.0", "10.0.1.256", "x"}, `nets.csv:3:2: range column "to": "10.0.1.256" is not an IPv4 address`},
		{[]string{"167772416", "167772417", "x"}, `nets.csv:3:1: range column "from": "167772416" is not an IPv4 address`},
		{[]string{"10.0.1.9", "10.0.1.1", "x"}, `nets.csv:3:1: range 10.0.1.9-10.0.1.1 is empty`},
		{[]string{"10.0.0.128", "10.0.0.128", "x"}, `nets.csv:3:1: ranges overlap: [10.0.0.128, 10.0.0.128] of this row and [10.0.0.0, 10.0.0.255] of the row at nets.csv:2:1`},
	} {
		src := rowsOf([]string{"from", "to", "name"}, []string{"10.0.0.0", "10.0.0.255", "lab"}, c.row)
		_, err := compile.File(src, t.TempDir()+"/n.lut", opts)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("row %q: %v, want %q", c.row, err, c.want)
		}
	}
	src := rowsOf([]string{"from", "to", "name"}, []string{"0", "10", "a"}, []string{"10.0.0.1", "10.0.0.2", "b"})
	if _, err := compile.File(src, t.TempDir()+"/n.lut", opts); err == nil || !strings.Contains(err.Error(), `nets.csv:3:1: range column "from": "10.0.0.1" is not an integer (the table's first row gives integers)`) {
		t.Errorf("an address in an integer range table: %v", err)
	}
}

func TestRangeIPv4DoesNotAllocate(t *testing.T) {
	tbl, _ := build(t, rowsOf([]string{"from", "to", "start", "end", "name"}, []string{"10.1.2.0", "10.1.2.255", "100", "200", "ann"},
		[]string{"10.1.2.0", "10.1.2.255", "200", "", "bob"}),
		compile.Options{Match: compile.MatchRange, RangeColumns: []string{"from", "to"}, ValidFrom: "start", ValidTo: "end"})
	var row reader.Row
	out := make([]reader.View, 4)
	key := []byte("10.1.2.3")
	if n := testing.AllocsPerRun(1000, func() {
		if !tbl.GetAt(key, 150, &row) || tbl.MatchAt(key, 250, out) != 1 || string(out[0].Col(4)) != "bob" {
			t.Fatal("a lookup failed")
		}
	}); n != 0 {
		t.Fatalf("%v allocations per lookup", n)
	}
}
