package rowjson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lutkit/lutkit/compile"
	"github.com/lutkit/lutkit/compile/source"
	"github.com/lutkit/lutkit/reader"
)

// reference is a row as encoding/json writes an object of strings (keys
// in column order, no HTML escaping), but for \b and \f, which jsonstr
// writes as \u0008 and \u000c.
func reference(t *testing.T, cols []string, v reader.View) string {
	t.Helper()
	var b bytes.Buffer
	b.WriteByte('{')
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	for i, c := range cols {
		if i > 0 {
			b.WriteByte(',')
		}
		if err := enc.Encode(c); err != nil {
			t.Fatal(err)
		}
		b.Truncate(b.Len() - 1)
		b.WriteByte(':')
		if err := enc.Encode(string(v.Col(i))); err != nil {
			t.Fatal(err)
		}
		b.Truncate(b.Len() - 1)
	}
	b.WriteByte('}')
	return strings.NewReplacer(`\\`, `\\`, `\b`, `\u0008`, `\f`, `\u000c`).Replace(b.String())
}

// TestEncoder: rows of every shape (values to escape in any word, of every
// length around the fixed-size moves, empty, multi-byte, a record too
// large for 16-bit value ends, with and without a column name longer
// than a padded key) are written alike by an Encoder and by Append, and as
// encoding/json writes them.
func TestEncoder(t *testing.T) {
	for _, long := range []string{strings.Repeat("a column name longer than 32 bytes ", 2), "a shorter name"} {
		t.Run(fmt.Sprint(len(long)), func(t *testing.T) { testEncoder(t, long) })
	}
}

func testEncoder(t *testing.T, long string) {
	cols := []string{"id", "a", long, `q"<&>`, "b"}
	var csv strings.Builder
	csv.WriteString(`id,a,"` + long + `","q""<&>",b` + "\n")
	quote := func(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
	n := 0
	add := func(vals ...string) {
		n++
		fmt.Fprintf(&csv, "%d", n)
		for _, v := range vals {
			csv.WriteString("," + quote(v))
		}
		csv.WriteString("\n")
	}
	for l := range 70 {
		s := strings.Repeat("x", l)
		add(s, s, s, s)
		for _, c := range []string{`"`, `\`, "\t", "\n", "\x01", "\x1f", "\x7f", "\b", "\f", "é", "\u2028", "\u2029", "<", "&", "日本"} {
			add(s+c, s, s, s)
			add(s, s, s, s+c)
			add(c+s, c+s+c, "", c)
		}
	}
	add(strings.Repeat("y", 70000), "wide", "", "record") // value ends past 16 bits
	add(strings.Repeat("z\"", 3000), "", "", "")
	dir := t.TempDir()
	path := filepath.Join(dir, "t.lut")
	src, err := source.NewCSVReader(strings.NewReader(csv.String()), "t.csv", source.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := compile.File(src, path, compile.Options{Key: []string{"id"}}); err != nil {
		t.Fatal(err)
	}
	tb, err := reader.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer tb.Close()
	enc := NewEncoder(tb.Columns(), nil)
	var row reader.Row
	for i := 1; i <= n; i++ {
		if !tb.Get([]byte(fmt.Sprint(i)), &row) {
			t.Fatalf("row %d not found", i)
		}
		v := row.View()
		want := reference(t, cols, v)
		// After a prefix, into a buffer with and without room.
		for _, dst := range [][]byte{[]byte("x"), append(make([]byte, 0, 1<<17), 'x')} {
			if got := string(enc.Append(dst, v)); got != "x"+want {
				t.Fatalf("row %d: Encoder.Append\n got %.300s\nwant %.300s", i, got[1:], want)
			}
		}
		if got := string(Append(nil, tb.Columns(), nil, v)); got != want {
			t.Fatalf("row %d: Append\n got %.300s\nwant %.300s", i, got, want)
		}
	}
	// A reset encoder writes another table's rows.
	enc.Reset([]string{"k"}, nil)
	if got := string(enc.Append(nil, v1(t, dir))); got != `{"k":"1"}` {
		t.Fatalf("after Reset: %s", got)
	}
}

// v1 returns the row of a one-column table.
func v1(t *testing.T, dir string) reader.View {
	path := filepath.Join(dir, "k.lut")
	src, _ := source.NewCSVReader(strings.NewReader("k\n1\n"), "k.csv", source.Options{})
	if _, err := compile.File(src, path, compile.Options{Key: []string{"k"}}); err != nil {
		t.Fatal(err)
	}
	tb, err := reader.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tb.Close() })
	v, ok := tb.Lookup([]byte("1"))
	if !ok {
		t.Fatal("not found")
	}
	return v
}

// TestAppendAllocs: rows are written without allocating.
func TestAppendAllocs(t *testing.T) {
	v := v1(t, t.TempDir())
	enc := NewEncoder([]string{"k"}, nil)
	out := make([]byte, 0, 256)
	if n := testing.AllocsPerRun(1000, func() { out = enc.Append(out[:0], v) }); n != 0 {
		t.Errorf("Encoder.Append: %v allocs", n)
	}
	cols := []string{"k"}
	if n := testing.AllocsPerRun(1000, func() { out = Append(out[:0], cols, nil, v) }); n != 0 {
		t.Errorf("Append: %v allocs", n)
	}
}

// TestTyped: a table's number, bool and json columns are written as
// stored, unquoted, an empty value as null, its text columns as strings,
// the same by Append and by an Encoder; an Encoder reset for a text table
// writes strings again.
func TestTyped(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "t.lut")
	src, err := source.NewCSVReader(strings.NewReader("id,n,b,j,s\n1,-0.5e+2,true,\"{\"\"k\"\":[null,\"\"\\u00e9\"\"]}\",\"q\"\"\"\n2,,,,\n"), "t.csv", source.Options{})
	if err != nil {
		t.Fatal(err)
	}
	types := map[string]string{"n": "number", "b": "bool", "j": "json"}
	if _, err := compile.File(src, path, compile.Options{Key: []string{"id"}, ColumnTypes: types}); err != nil {
		t.Fatal(err)
	}
	tb, err := reader.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer tb.Close()
	enc := NewEncoder(tb.Columns(), tb.ColumnTypes())
	for id, want := range map[string]string{
		"1": `{"id":"1","n":-0.5e+2,"b":true,"j":{"k":[null,"\u00e9"]},"s":"q\""}`,
		"2": `{"id":"2","n":null,"b":null,"j":null,"s":""}`,
	} {
		v, ok := tb.Lookup([]byte(id))
		if !ok {
			t.Fatalf("row %s not found", id)
		}
		if got := string(enc.Append([]byte("x"), v)); got != "x"+want {
			t.Errorf("row %s: Encoder.Append\n got %s\nwant %s", id, got[1:], want)
		}
		if got := string(Append(nil, tb.Columns(), tb.ColumnTypes(), v)); got != want {
			t.Errorf("row %s: Append\n got %s\nwant %s", id, got, want)
		}
		if !json.Valid([]byte(want)) {
			t.Fatalf("the expected row is not JSON: %s", want)
		}
	}
	enc.Reset([]string{"k"}, nil)
	if got := string(enc.Append(nil, v1(t, dir))); got != `{"k":"1"}` {
		t.Fatalf("after Reset for a text table: %s", got)
	}
}
