package compile

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/lutkit/lutkit/compile/source"
	"github.com/lutkit/lutkit/format"
	"github.com/lutkit/lutkit/reader"
)

// randomCSV returns a CSV table of rows random keys (some repeated, when
// dups; one key in a third of the rows, when hot) and values, and the
// value the table should hold for each key with --on-duplicate last.
func randomCSV(rng *rand.Rand, rows int, dups, hot bool) (string, map[string]string) {
	var b strings.Builder
	b.WriteString("k,v\n")
	want := make(map[string]string, rows)
	keys := make([]string, 0, rows)
	for i := range rows {
		var k string
		if hot && i > 0 && rng.IntN(3) == 0 {
			k = keys[0]
		} else if dups && len(keys) > 0 && rng.IntN(10) == 0 {
			k = keys[rng.IntN(len(keys))]
		} else {
			k = fmt.Sprintf("%x-%d", rng.Uint64()>>rng.IntN(60), i)
			keys = append(keys, k)
		}
		v := fmt.Sprintf("v%d", rng.Uint32())
		fmt.Fprintf(&b, "%s,%s\n", k, v)
		want[k] = v
	}
	return b.String(), want
}

// compileWith compiles csv with GOMAXPROCS set to procs and returns the
// table's bytes.
func compileWith(t *testing.T, csv string, opts Options, procs int) []byte {
	t.Helper()
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
	src, err := source.NewCSVReader(strings.NewReader(csv), "t.csv", source.Options{})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), fmt.Sprintf("t%d.lut", procs))
	if _, err := File(src, path, opts); err != nil {
		t.Fatalf("compile with GOMAXPROCS=%d: %v", procs, err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".lut-spill-*")); len(left) > 0 {
		t.Fatalf("the partition files were left behind: %v", left)
	}
	return b
}

// TestPartitionedDeterministic compiles random tables large enough to be
// partitioned on one and on two cores and checks that the files are the
// same bytes, that they carry the partitioned feature, and that every key
// finds its row (single and batch lookups) and no other key does.
func TestPartitionedDeterministic(t *testing.T) {
	defer func(n int) { spillRows = n }(spillRows)
	spillRows = 1000
	// hot puts a third of the rows in one key, so in one of readSorted's
	// buckets, larger than insertionRun.
	for _, tc := range []struct {
		rows      int
		dups, hot bool
	}{{999, false, false}, {1000, false, false}, {5000, true, false}, {40000, true, false}, {6000, true, true}} {
		t.Run(fmt.Sprintf("rows=%d,hot=%v", tc.rows, tc.hot), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(tc.rows), 7))
			csv, want := randomCSV(rng, tc.rows, tc.dups, tc.hot)
			opts := Options{Key: []string{"k"}, OnDuplicate: DuplicateLast}
			one := compileWith(t, csv, opts, 1)
			two := compileWith(t, csv, opts, 2)
			if !bytes.Equal(one, two) {
				t.Fatalf("GOMAXPROCS=1 and 2 give different tables (%d and %d bytes)", len(one), len(two))
			}
			tab, err := reader.OpenBytes(one)
			if err != nil {
				t.Fatal(err)
			}
			h, err := format.DecodeHeader(one, int64(len(one)))
			if err != nil {
				t.Fatal(err)
			}
			if got, wantBit := h.Incompat&format.FeatureBucketedSlots != 0, tc.rows >= spillRows; got != wantBit {
				t.Fatalf("bucketed feature %v, want %v", got, wantBit)
			}
			if err := tab.Verify(); err != nil {
				t.Fatal(err)
			}
			if tab.Rows() != len(want) {
				t.Fatalf("%d rows, want %d", tab.Rows(), len(want))
			}
			var keys [][]byte
			for k, v := range want {
				view, ok := tab.Lookup([]byte(k))
				if !ok || string(view.Col(1)) != v {
					t.Fatalf("Lookup(%q) = %q, %v; want %q", k, view.Col(1), ok, v)
				}
				keys = append(keys, []byte(k))
				if _, ok := tab.Lookup([]byte(k + "x")); ok {
					t.Fatalf("Lookup(%q) found a row", k+"x")
				}
			}
			// The keys, each followed by a key that is not in the table.
			found := len(keys)
			for i := range found {
				keys = append(keys, keys[i], append(slices.Clone(keys[i]), 'x'))
			}
			keys = keys[found:]
			out := make([]reader.View, len(keys))
			if n := tab.LookupBatch(keys, out); n != found {
				t.Fatalf("LookupBatch found %d of %d keys", n, found)
			}
			for i := 0; i < len(keys); i += 2 {
				if string(out[i].Col(1)) != want[string(keys[i])] {
					t.Fatalf("LookupBatch(%q) = %q, want %q", keys[i], out[i].Col(1), want[string(keys[i])])
				}
				if out[i+1].Col(0) != nil {
					t.Fatalf("LookupBatch(%q) found a row", keys[i+1])
				}
			}
		})
	}
}

// TestPartitionedDuplicateError checks that a duplicate key of a
// partitioned table is reported with its lines, as in a small table.
func TestPartitionedDuplicateError(t *testing.T) {
	defer func(n int) { spillRows = n }(spillRows)
	spillRows = 100
	var b strings.Builder
	b.WriteString("k,v\n")
	for i := range 3000 {
		fmt.Fprintf(&b, "key%d,%d\n", i, i)
	}
	b.WriteString("key1234,again\n")
	src, err := source.NewCSVReader(strings.NewReader(b.String()), "t.csv", source.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = File(src, filepath.Join(t.TempDir(), "t.lut"), Options{Key: []string{"k"}})
	if err == nil || !strings.Contains(err.Error(), `duplicate key "key1234" at lines 1236 and 3002`) {
		t.Fatalf("got %v, want the duplicate key1234 at lines 1236 and 3002", err)
	}
}
