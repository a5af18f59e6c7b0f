package compile

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lutkit/lutkit/format"
	"github.com/lutkit/lutkit/format/delta"
	"github.com/lutkit/lutkit/format/formattest"
	"github.com/lutkit/lutkit/reader"
)

// The tests of this file lower spillRows, as TestPartitionedDeterministic
// does, so that tables of a few thousand rows get a bucketed index, and
// check the options and paths that index has to keep working with.

// bucketedTable compiles csv with spillRows lowered to 1000, on one and on
// two cores, checks that both give the same bytes, a bucketed index and a
// table that verifies, and returns the table.
func bucketedTable(t *testing.T, csv string, opts Options) ([]byte, *reader.Table) {
	t.Helper()
	defer func(n int) { spillRows = n }(spillRows)
	spillRows = 1000
	one := compileWith(t, csv, opts, 1)
	if two := compileWith(t, csv, opts, 2); !bytes.Equal(one, two) {
		t.Fatalf("GOMAXPROCS=1 and 2 give different tables (%d and %d bytes)", len(one), len(two))
	}
	tab, err := reader.OpenBytes(one)
	if err != nil {
		t.Fatal(err)
	}
	h := tab.Header()
	if h.Incompat&format.FeatureBucketedSlots == 0 || h.Minor != format.MinorBuckets {
		t.Fatalf("version %d.%d, feature bits %#x: not a bucketed index", h.Major, h.Minor, h.Incompat)
	}
	if err := tab.Verify(); err != nil {
		t.Fatal(err)
	}
	return one, tab
}

// csvOf returns a CSV table of a header and rows.
func csvOf(header string, rows int, row func(i int) string) string {
	var b strings.Builder
	b.WriteString(header + "\n")
	for i := range rows {
		b.WriteString(row(i) + "\n")
	}
	return b.String()
}

// TestBucketedFoldCase compiles a case-folded table whose keys mix cases:
// a lookup in any case finds its row, by Get, Lookup and LookupBatch, and
// a key that differs in more than its case finds none.
func TestBucketedFoldCase(t *testing.T) {
	const n = 4000
	csv := csvOf("k,v", n, func(i int) string { return fmt.Sprintf("Host-%d.Ünïcode.EXAMPLE,v%d", i, i) })
	_, tab := bucketedTable(t, csv, Options{Key: []string{"k"}, FoldCase: true})
	if !tab.FoldCase() || tab.Rows() != n {
		t.Fatalf("fold case %v, %d rows; want a folded table of %d", tab.FoldCase(), tab.Rows(), n)
	}
	var row reader.Row
	var keys [][]byte
	for i := range n {
		key := fmt.Sprintf("Host-%d.Ünïcode.EXAMPLE", i)
		want := fmt.Sprintf("v%d", i)
		for _, k := range []string{key, strings.ToLower(key), strings.ToUpper(key)} {
			if !tab.Get([]byte(k), &row) || string(row.Col(1)) != want {
				t.Fatalf("Get(%q) = %q, want %q", k, row.Col(1), want)
			}
		}
		if v, ok := tab.Lookup([]byte(strings.ToUpper(key) + "x")); ok {
			t.Fatalf("Lookup(%q) found %q", strings.ToUpper(key)+"x", v.Col(1))
		}
		keys = append(keys, []byte(strings.ToUpper(key)), []byte(key+"-"))
	}
	out := make([]reader.View, len(keys))
	if got := tab.LookupBatch(keys, out); got != n {
		t.Fatalf("LookupBatch found %d keys, want %d", got, n)
	}
	for i := 0; i < len(keys); i += 2 {
		if want := fmt.Sprintf("v%d", i/2); string(out[i].Col(1)) != want || out[i+1].Col(0) != nil {
			t.Fatalf("LookupBatch(%q) = %q, want %q; LookupBatch(%q) = %q", keys[i], out[i].Col(1), want, keys[i+1], out[i+1].Col(1))
		}
	}
}

// TestBucketedColumnTypes compiles a table with typed columns: the
// schema keeps the types, lookups find the values, and Verify checks the
// typed values of every row the buckets hold.
func TestBucketedColumnTypes(t *testing.T) {
	const n = 3000
	csv := csvOf("k,num,flag,doc", n, func(i int) string {
		return fmt.Sprintf("k%d,%d,%v,\"{\"\"i\"\":%d}\"", i, 7_000_000+i, i%2 == 0, i)
	})
	b, tab := bucketedTable(t, csv, Options{Key: []string{"k"}, ColumnTypes: map[string]string{"num": "number", "flag": "bool", "doc": "json"}})
	if h := tab.Header(); h.Incompat&format.FeatureColumnTypes == 0 {
		t.Fatalf("feature bits %#x lack COLUMN_TYPES", h.Incompat)
	}
	types := tab.ColumnTypes()
	if len(types) != 4 || types[1] != format.TypeNumber || types[2] != format.TypeBool || types[3] != format.TypeJSON {
		t.Fatalf("column types %v", types)
	}
	var row reader.Row
	for i := range n {
		if !tab.Get([]byte(fmt.Sprintf("k%d", i)), &row) || string(row.Col(1)) != fmt.Sprint(7_000_000+i) ||
			string(row.Col(2)) != fmt.Sprint(i%2 == 0) || string(row.Col(3)) != fmt.Sprintf(`{"i":%d}`, i) {
			t.Fatalf("Get(k%d) = %q %q %q", i, row.Col(1), row.Col(2), row.Col(3))
		}
	}
	// A number made invalid behind a resealed checksum: only the check of
	// the row's values can find it.
	bad := bytes.Clone(b)
	at := bytes.Index(bad, []byte("7001234"))
	if at < 0 || bytes.Contains(bad[at+1:], []byte("7001234")) {
		t.Fatal("the value 7001234 is not in the table once")
	}
	bad[at+3] = 'x'
	formattest.Reseal(t, bad, format.SectionData)
	tab, err := reader.OpenBytes(bad)
	if err != nil {
		t.Fatal(err)
	}
	if err := tab.Verify(); !errors.Is(err, reader.ErrVerify) || !strings.Contains(err.Error(), "not a number value") {
		t.Fatalf("Verify of a row holding 700x234 in a number column: %v", err)
	}
}

// TestBucketedOnDuplicate compiles a table that repeats keys with
// --on-duplicate first and last: each key finds the row its policy keeps,
// Records gives that row alone, and the dropped rows are counted.
func TestBucketedOnDuplicate(t *testing.T) {
	const keys, rows = 2500, 6000
	// Row i has key i%keys: the first 2500 rows are each key's first, the
	// last 2500 its last.
	csv := csvOf("k,v", rows, func(i int) string { return fmt.Sprintf("key%d,row%d", i%keys, i) })
	for _, tc := range []struct {
		policy string
		row    func(k int) int
	}{
		{DuplicateFirst, func(k int) int { return k }},
		{DuplicateLast, func(k int) int { return k + (rows-1-k)/keys*keys }},
	} {
		t.Run(tc.policy, func(t *testing.T) {
			_, tab := bucketedTable(t, csv, Options{Key: []string{"k"}, OnDuplicate: tc.policy})
			if tab.Rows() != keys || tab.Meta().Duplicates != rows-keys || tab.Meta().OnDuplicate != tc.policy {
				t.Fatalf("%d rows, %d duplicates (%s); want %d and %d", tab.Rows(), tab.Meta().Duplicates, tab.Meta().OnDuplicate, keys, rows-keys)
			}
			var row reader.Row
			for k := range keys {
				if want := fmt.Sprintf("row%d", tc.row(k)); !tab.Get([]byte(fmt.Sprintf("key%d", k)), &row) || string(row.Col(1)) != want {
					t.Fatalf("Get(key%d) = %q, want %q", k, row.Col(1), want)
				}
			}
			seen := map[string]string{}
			if err := tab.Records(func(v reader.View) bool {
				if _, dup := seen[string(v.Col(0))]; dup {
					t.Errorf("Records gives key %s twice", v.Col(0))
				}
				seen[string(v.Col(0))] = string(v.Col(1))
				return true
			}); err != nil {
				t.Fatal(err)
			}
			if len(seen) != keys {
				t.Fatalf("Records gives %d rows, want %d", len(seen), keys)
			}
			for k := range keys {
				if got, want := seen[fmt.Sprintf("key%d", k)], fmt.Sprintf("row%d", tc.row(k)); got != want {
					t.Fatalf("Records gives key%d as %q, want %q", k, got, want)
				}
			}
		})
	}
}

// TestBucketedSuffix compiles a large suffix table: it is bucketed like an
// exact one, readers open it, and a name finds the row of its longest
// suffix in the table.
func TestBucketedSuffix(t *testing.T) {
	const n = 3000
	csv := csvOf("domain,v", n, func(i int) string { return fmt.Sprintf("Site%d.Example.com,v%d", i, i) })
	_, tab := bucketedTable(t, csv, Options{Key: []string{"domain"}, Match: MatchSuffix})
	var row reader.Row
	for i := range n {
		for _, q := range []string{fmt.Sprintf("site%d.example.com", i), fmt.Sprintf("www.a.SITE%d.example.com", i)} {
			if want := fmt.Sprintf("v%d", i); !tab.Get([]byte(q), &row) || string(row.Col(1)) != want {
				t.Fatalf("Get(%q) = %q, want %q", q, row.Col(1), want)
			}
		}
	}
	if tab.Get([]byte("example.com"), &row) || tab.Get([]byte(fmt.Sprintf("site%d.example.com", n)), &row) {
		t.Fatalf("a name below no key of the table found %q", row.Col(1))
	}
}

// TestBucketedDelta encodes the delta between two versions of a bucketed
// table (rows changed, removed and added: other buckets, other records)
// and applies it: the target is rebuilt byte for byte, and opens.
func TestBucketedDelta(t *testing.T) {
	const n = 5000
	base, _ := bucketedTable(t, csvOf("k,v", n, func(i int) string { return fmt.Sprintf("k%d,value-%d", i, i) }), Options{Key: []string{"k"}})
	target, _ := bucketedTable(t, csvOf("k,v", n+40, func(i int) string {
		switch {
		case i >= 100 && i < 110:
			return fmt.Sprintf("gone%d,x", i) // a key replaced
		case i%97 == 0:
			return fmt.Sprintf("k%d,changed-%d", i, i) // a longer value
		}
		return fmt.Sprintf("k%d,value-%d", i, i)
	}), Options{Key: []string{"k"}})
	var d bytes.Buffer
	st, err := delta.Encode(&d, base, target)
	if err != nil {
		t.Fatal(err)
	}
	if st.Derived != 0 {
		t.Fatalf("%d bytes of a bucketed SLOTS section derived; it is carried as bytes", st.Derived)
	}
	if st.Size >= int64(len(target))/2 {
		t.Fatalf("delta of %d bytes for a %d-byte target: little was copied", st.Size, len(target))
	}
	out, err := os.Create(filepath.Join(t.TempDir(), "out.lut"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	if _, err := delta.Apply(out, bytes.NewReader(base), int64(len(base)), d.Bytes(), int64(len(target))); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	got, err := os.ReadFile(out.Name())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, target) {
		t.Fatalf("the rebuilt file (%d bytes) differs from the target (%d bytes)", len(got), len(target))
	}
	tab, err := reader.OpenBytes(got)
	if err != nil {
		t.Fatal(err)
	}
	var row reader.Row
	if !tab.Get([]byte("k97"), &row) || string(row.Col(1)) != "changed-97" || tab.Get([]byte("k105"), &row) || !tab.Get([]byte("k5039"), &row) {
		t.Fatalf("the rebuilt table does not hold the target's rows")
	}
}
