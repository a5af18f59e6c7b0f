package reader_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/lutkit/lutkit/compile"
	"github.com/lutkit/lutkit/compile/source"
	"github.com/lutkit/lutkit/format"
	"github.com/lutkit/lutkit/reader"
)

// genSource produces n customers-like rows on the fly: Index is 1..n, the
// other columns are deterministic pseudo-random text.
type genSource struct {
	n, i   int
	rng    *rand.Rand
	fields [][]byte
	buf    []byte
}

var genColumns = []string{"Index", "Customer Id", "First Name", "Last Name", "Company", "City", "Country", "Phone 1", "Phone 2", "Email", "Subscription Date", "Website"}

func newGenSource(n int, seed uint64) *genSource {
	return &genSource{n: n, rng: rand.New(rand.NewPCG(seed, 99)), fields: make([][]byte, len(genColumns))}
}

func (g *genSource) Columns() []string { return genColumns }
func (g *genSource) Line() int64       { return int64(g.i) + 1 }
func (g *genSource) Close() error      { return nil }

const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 ,\""

func (g *genSource) Next() ([][]byte, error) {
	if g.i >= g.n {
		return nil, io.EOF
	}
	g.i++
	g.buf = strconv.AppendInt(g.buf[:0], int64(g.i), 10)
	ends := []int{len(g.buf)}
	lens := []int{15, 6, 7, 18, 11, 20, 14, 17, 24, 10, 20}
	for _, l := range lens {
		l += g.rng.IntN(6)
		for j := 0; j < l; j++ {
			g.buf = append(g.buf, letters[g.rng.IntN(len(letters))])
		}
		ends = append(ends, len(g.buf))
	}
	start := 0
	for i, e := range ends {
		g.fields[i] = g.buf[start:e]
		start = e
	}
	return g.fields, nil
}

// build compiles src into a temporary file and opens it.
func build(t testing.TB, src source.Reader, opts compile.Options) (*reader.Table, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "t.lut")
	if _, err := compile.File(src, path, opts); err != nil {
		t.Fatalf("compile: %v", err)
	}
	tbl, err := reader.Open(path)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { tbl.Close() })
	return tbl, path
}

func rowsOf(header []string, data ...[]string) *source.Rows {
	return &source.Rows{Header: header, Data: data}
}

// checkCols fails the test unless v.Cols gives what Col gives for every
// column.
func checkCols(t *testing.T, v reader.View) {
	t.Helper()
	cols := v.Cols(nil)
	if len(cols) != v.Len() {
		t.Fatalf("Cols gave %d values, Len is %d", len(cols), v.Len())
	}
	for i, c := range cols {
		if want := v.Col(i); !bytes.Equal(c, want) || (c == nil) != (want == nil) {
			t.Fatalf("Cols()[%d] = %q, Col(%d) = %q", i, c, i, want)
		}
	}
}

func TestAbsentViewCols(t *testing.T) {
	var v reader.View
	if cols := v.Cols(nil); len(cols) != 0 || len(v.Values()) != 0 {
		t.Fatalf("absent row: Cols %q, Values %q", cols, v.Values())
	}
}

func TestRoundTrip(t *testing.T) {
	const n = 20000
	tbl, _ := build(t, newGenSource(n, 1), compile.Options{Key: []string{"Index"}})
	if err := tbl.Verify(); err != nil {
		t.Fatal(err)
	}
	if tbl.Rows() != n {
		t.Fatalf("rows = %d", tbl.Rows())
	}
	want := newGenSource(n, 1)
	var row reader.Row
	for {
		fields, err := want.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if !tbl.Get(fields[0], &row) {
			t.Fatalf("key %s not found", fields[0])
		}
		for i, f := range fields {
			if !bytes.Equal(row.Col(i), f) {
				t.Fatalf("key %s col %d = %q, want %q", fields[0], i, row.Col(i), f)
			}
		}
		checkCols(t, row.View())
	}
	for _, k := range []string{"0", "-1", "", "20001", "1 ", "abc"} {
		if tbl.Get([]byte(k), &row) {
			t.Fatalf("absent key %q found", k)
		}
	}
}

func TestEmptyAndTinyTables(t *testing.T) {
	hdr := []string{"k", "v"}
	for n := 0; n <= 3; n++ {
		var data [][]string
		for i := 0; i < n; i++ {
			data = append(data, []string{fmt.Sprint("key", i), fmt.Sprint("value", i)})
		}
		tbl, _ := build(t, rowsOf(hdr, data...), compile.Options{Key: []string{"k"}})
		if err := tbl.Verify(); err != nil {
			t.Fatalf("n=%d: %v", n, err)
		}
		var row reader.Row
		for i := 0; i < n; i++ {
			if !tbl.Get([]byte(fmt.Sprint("key", i)), &row) || string(row.Col(1)) != fmt.Sprint("value", i) {
				t.Fatalf("n=%d: key%d wrong", n, i)
			}
		}
		if tbl.Get([]byte("nope"), &row) {
			t.Fatalf("n=%d: absent key found", n)
		}
		out := make([]reader.View, 2)
		if got := tbl.LookupBatch([][]byte{[]byte("key0"), []byte("nope")}, out); got != min(n, 1) {
			t.Fatalf("n=%d: batch found %d", n, got)
		}
	}
}

func TestCompositeAndFoldCase(t *testing.T) {
	hdr := []string{"host", "port", "owner"}
	tbl, _ := build(t, rowsOf(hdr,
		[]string{"Web01", "443", "alice"},
		[]string{"web01", "80", "bob"},
		[]string{"ÉCOLE", "1", "carol"},
	), compile.Options{Key: []string{"host", "port"}, FoldCase: true})
	var row reader.Row
	for _, c := range []struct{ host, port, owner string }{
		{"WEB01", "443", "alice"}, {"web01", "80", "bob"}, {"école", "1", "carol"}, {"École", "1", "carol"},
	} {
		key := reader.JoinKey(nil, []byte(c.host), []byte(c.port))
		if !tbl.Get(key, &row) || string(row.Col(2)) != c.owner {
			t.Errorf("%s/%s: not found or wrong", c.host, c.port)
		}
		// The stored value keeps its original case.
		if string(row.Col(0)) == "web01" && c.owner == "alice" {
			t.Errorf("value was folded")
		}
	}
	if tbl.Get(reader.JoinKey(nil, []byte("web01"), []byte("8")), &row) {
		t.Error("partial key found")
	}
}

func TestWideRecords(t *testing.T) {
	big := string(bytes.Repeat([]byte("x"), 70000))
	tbl, _ := build(t, rowsOf([]string{"k", "v"}, []string{"a", big}, []string{"b", "small"}, []string{big, "bigkey"}),
		compile.Options{Key: []string{"k"}})
	if err := tbl.Verify(); err != nil {
		t.Fatal(err)
	}
	var row reader.Row
	if !tbl.Get([]byte("a"), &row) || string(row.Col(1)) != big {
		t.Fatal("wide value lost")
	}
	if !tbl.Get([]byte(big), &row) || string(row.Col(1)) != "bigkey" {
		t.Fatal("wide key lost")
	}
	if !tbl.Get([]byte("b"), &row) || string(row.Col(1)) != "small" {
		t.Fatal("narrow row after a wide one lost")
	}
	if err := tbl.Records(func(v reader.View) bool { checkCols(t, v); return true }); err != nil {
		t.Fatal(err)
	}
}

func TestDuplicates(t *testing.T) {
	hdr := []string{"k", "v"}
	data := [][]string{{"a", "1"}, {"b", "2"}, {"a", "3"}, {"c", "4"}, {"a", "5"}}
	path := filepath.Join(t.TempDir(), "d.lut")
	_, err := compile.File(rowsOf(hdr, data...), path, compile.Options{Key: []string{"k"}})
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte(`duplicate key "a" at lines 2 and 4`)) {
		t.Fatalf("got %v, want a duplicate error naming lines 2 and 4", err)
	}
	if _, statErr := os.Stat(path); !os.IsNotExist(statErr) {
		t.Fatal("failed compile left a file at the target path")
	}
	for policy, want := range map[string]string{"first": "1", "last": "5"} {
		tbl, _ := build(t, rowsOf(hdr, data...), compile.Options{Key: []string{"k"}, OnDuplicate: policy})
		var row reader.Row
		if !tbl.Get([]byte("a"), &row) || string(row.Col(1)) != want {
			t.Errorf("%s: a = %q, want %q", policy, row.Col(1), want)
		}
		if tbl.Rows() != 3 || tbl.Meta().Duplicates != 2 {
			t.Errorf("%s: rows %d duplicates %d", policy, tbl.Rows(), tbl.Meta().Duplicates)
		}
		if err := tbl.Verify(); err != nil {
			t.Error(err)
		}
		var keys []string
		if err := tbl.Records(func(v reader.View) bool { keys = append(keys, string(v.Key())+"="+string(v.Col(1))); return true }); err != nil {
			t.Error(err)
		}
		if len(keys) != 3 {
			t.Errorf("%s: Records gave %v", policy, keys)
		}
	}
}

func TestDeterministic(t *testing.T) {
	var sums [2][]byte
	for i := range sums {
		path := filepath.Join(t.TempDir(), "t.lut")
		if _, err := compile.File(newGenSource(5000, 3), path, compile.Options{Key: []string{"Index"}}); err != nil {
			t.Fatal(err)
		}
		sums[i], _ = os.ReadFile(path)
	}
	if !bytes.Equal(sums[0], sums[1]) {
		t.Fatal("two compiles of the same input differ")
	}
}

func TestBatchMatchesGet(t *testing.T) {
	tbl, _ := build(t, newGenSource(10000, 4), compile.Options{Key: []string{"Index"}})
	var keys [][]byte
	for i := 0; i < 1000; i++ {
		keys = append(keys, []byte(strconv.Itoa(i*13%12000))) // some absent
	}
	out := make([]reader.View, len(keys))
	found := tbl.LookupBatch(keys, out)
	n := 0
	var row reader.Row
	for i, k := range keys {
		ok := tbl.Get(k, &row)
		if ok != (out[i].Len() > 0) {
			t.Fatalf("key %s: batch %v, get %v", k, out[i].Len() > 0, ok)
		}
		if ok {
			n++
			if !bytes.Equal(out[i].Col(9), row.Col(9)) {
				t.Fatalf("key %s: batch and get differ", k)
			}
		}
	}
	if n != found {
		t.Fatalf("found %d, counted %d", found, n)
	}
}

func TestLookupDoesNotAllocate(t *testing.T) {
	tbl, _ := build(t, newGenSource(1000, 5), compile.Options{Key: []string{"Index"}})
	checkNoAllocs(t, tbl, "1", []byte("1"), []byte("500"), []byte("nope"))
}

// checkNoAllocs fails the test if Get, Lookup, LookupBatch or Match of
// hit, present and absent allocates, once a Row has grown on warm.
func checkNoAllocs(t *testing.T, tbl *reader.Table, warm string, hit, present, absent []byte) {
	t.Helper()
	var row reader.Row
	tbl.Get([]byte(warm), &row)
	keys := [][]byte{hit, present, absent}
	out := make([]reader.View, 3)
	if a := testing.AllocsPerRun(1000, func() {
		tbl.Get(keys[0], &row)
		tbl.Get(keys[2], &row)
		tbl.Lookup(keys[1])
		tbl.LookupBatch(keys, out)
		tbl.Match(keys[0], out)
	}); a != 0 {
		t.Fatalf("%v allocations per lookup round", a)
	}
}

func TestAcquireRelease(t *testing.T) {
	tbl, _ := build(t, newGenSource(100, 6), compile.Options{Key: []string{"Index"}})
	if !tbl.Acquire() {
		t.Fatal("acquire failed on an open table")
	}
	tbl.Close()
	// Still mapped: the acquired reference keeps it.
	if v, ok := tbl.Lookup([]byte("7")); !ok || string(v.Col(0)) != "7" {
		t.Fatal("lookup under an acquired reference failed after Close")
	}
	if err := tbl.Release(); err != nil {
		t.Fatal(err)
	}
	if tbl.Acquire() {
		t.Fatal("acquire succeeded on a released table")
	}
}

// Every single-byte flip and every truncation must be caught by Open or
// Verify, and lookups on whatever opens must not panic.
func TestCorruption(t *testing.T) {
	// A small table, so that every byte of it can be flipped in turn.
	_, path := build(t, newGenSource(40, 7), compile.Options{Key: []string{"Index"}})
	var keys [][]byte
	for i := 0; i < 45; i += 3 {
		keys = append(keys, []byte(strconv.Itoa(i)))
	}
	checkDamage(t, path, keys)
}

// checkDamage flips every byte of the table at path in turn (every 7th
// with -short), and cuts it at every length: Open must refuse the file
// with a format error, or Verify must, and lookups of keys (Get, Match),
// and Records in between must not panic.
func checkDamage(t *testing.T, path string, keys [][]byte) {
	t.Helper()
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]reader.View, 4)
	check := func(b []byte, what string) {
		tbl, err := reader.OpenBytes(b)
		if err != nil {
			if !errors.Is(err, format.ErrCorrupt) && !errors.Is(err, format.ErrNotTable) && !errors.Is(err, format.ErrVersion) {
				t.Fatalf("%s: open error %v is not a format error", what, err)
			}
			return
		}
		var row reader.Row
		for _, k := range keys {
			tbl.Get(k, &row)
			tbl.Match(k, out)
		}
		_ = tbl.Records(func(v reader.View) bool { checkCols(t, v); return true }) // may fail: the file is damaged
		if err := tbl.Verify(); err == nil {
			t.Fatalf("%s: Verify passed on a damaged file", what)
		}
	}
	step := 1
	if testing.Short() {
		step = 7
	}
	for i := 0; i < len(good); i += step {
		b := bytes.Clone(good)
		b[i] ^= 0x5a
		check(b, fmt.Sprintf("byte %d flipped", i))
	}
	for n := 0; n < len(good); n += step {
		check(good[:n], fmt.Sprintf("cut at %d", n))
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.lut")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := reader.Open(empty); err == nil || !errors.Is(err, format.ErrNotTable) {
		t.Errorf("empty file: %v", err)
	}
	if _, err := reader.Open(dir); err == nil {
		t.Error("directory opened")
	}
	if _, err := reader.Open(filepath.Join(dir, "missing.lut")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	_, path := build(t, newGenSource(10, 8), compile.Options{Key: []string{"Index"}})
	b, _ := os.ReadFile(path)
	b[8] = 9 // major version 9
	if _, err := reader.OpenBytes(b); !errors.Is(err, format.ErrVersion) {
		t.Errorf("newer major version: %v", err)
	}
}
