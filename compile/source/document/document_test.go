package document_test

import (
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/lutkit/lutkit/compile/source"
	_ "github.com/lutkit/lutkit/compile/source/document"
	"github.com/lutkit/lutkit/compile/source/sourcetest"
)

// write writes data to a file named name in a new directory; a name
// ending in .gz is gzip-compressed.
func write(t testing.TB, name, data string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	b := []byte(data)
	if strings.HasSuffix(name, ".gz") {
		var sb strings.Builder
		zw := gzip.NewWriter(&sb)
		if _, err := zw.Write(b); err != nil {
			t.Fatal(err)
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		b = []byte(sb.String())
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func read(t *testing.T, path string, opts source.Options) sourcetest.Result {
	t.Helper()
	r, err := source.Open(path, opts)
	if err != nil {
		return sourcetest.Result{Errs: []string{"open: " + strings.TrimPrefix(err.Error(), path)}}
	}
	defer r.Close()
	res := sourcetest.ReadAll(t, r)
	for i, e := range res.Errs {
		res.Errs[i] = strings.Replace(e, path, "", 1)
	}
	return res
}

const dictJSON = `{"10.0.0.1": "db",
 "10.0.0.2": {"role": "web", "geo": {"city": "Köln", "n": 1.50}, "tags": ["a", 2, "\u00e9\"<"]},
 "10.0.0.3": null,
 "10.0.0.4": true, "10.0.0.5": {"geo": {"city": null}}}
`

const dictYAML = `10.0.0.1: db
10.0.0.2:
  role: web
  geo: {city: Köln, n: 1.50}
  tags: [a, 2, "é\"<"]
10.0.0.3: ~
10.0.0.4: true
10.0.0.5:
  geo:
    city: null
`

func TestDictionary(t *testing.T) {
	flat := []string{"key", "value", "role", "geo.city", "geo.n", "tags"}
	nested := []string{"key", "value", "role", "geo", "tags"}
	for _, c := range []struct {
		name, file, data string
		opts             source.Options
		want             sourcetest.Result
	}{
		{"json flatten", "d.json", dictJSON, source.Options{}, sourcetest.Result{Columns: flat, Rows: []string{
			"1:10.0.0.1|db||||",
			`2:10.0.0.2||web|Köln|1.50|["a",2,"é\"<"]`,
			"3:10.0.0.3|||||",
			"4:10.0.0.4|true||||",
			"4:10.0.0.5|||||",
		}}},
		{"json nested as json", "d.json.gz", dictJSON, source.Options{Nested: "json"}, sourcetest.Result{Columns: nested, Rows: []string{
			"1:10.0.0.1|db|||",
			`2:10.0.0.2||web|{"city":"Köln","n":1.50}|["a",2,"é\"<"]`,
			"3:10.0.0.3||||",
			"4:10.0.0.4|true|||",
			`4:10.0.0.5|||{"city":null}|`,
		}}},
		{"yaml flatten", "d.yml", dictYAML, source.Options{}, sourcetest.Result{Columns: flat, Rows: []string{
			"1:10.0.0.1|db||||",
			`2:10.0.0.2||web|Köln|1.50|["a",2,"é\"<"]`,
			"6:10.0.0.3|||||",
			"7:10.0.0.4|true||||",
			"8:10.0.0.5|||||",
		}}},
		{"yaml nested as json", "d.yaml.gz", dictYAML, source.Options{Nested: "json"}, sourcetest.Result{Columns: nested, Rows: []string{
			"1:10.0.0.1|db|||",
			`2:10.0.0.2||web|{"city":"Köln","n":1.50}|["a",2,"é\"<"]`,
			"6:10.0.0.3||||",
			"7:10.0.0.4|true|||",
			`8:10.0.0.5|||{"city":null}|`,
		}}},
		{"header", "d.json", dictJSON, source.Options{Header: []string{"key", "value", "role", "geo.city", "geo.n", "tags"}}, sourcetest.Result{Columns: flat, Rows: []string{
			"1:10.0.0.1|db||||",
			`2:10.0.0.2||web|Köln|1.50|["a",2,"é\"<"]`,
			"3:10.0.0.3|||||",
			"4:10.0.0.4|true||||",
			"4:10.0.0.5|||||",
		}}},
		{"header lacks a field", "d.json", dictJSON, source.Options{Header: []string{"key", "value"}}, sourcetest.Result{Columns: []string{"key", "value"},
			Rows: []string{"1:10.0.0.1|db", "3:10.0.0.3|", "4:10.0.0.4|true"},
			Errs: []string{
				`:2:15: field "role" is not a column (columns: key, value)`,
				`:4:41: field "geo.city" is not a column (columns: key, value)`,
			}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := read(t, write(t, c.file, c.data), c.opts); !reflect.DeepEqual(got, c.want) {
				t.Errorf("got  %#v\nwant %#v", got, c.want)
			}
		})
	}
}

func TestRowsOfObjects(t *testing.T) {
	want := sourcetest.Result{Columns: []string{"id", "name", "x.y", "x.z"}, Rows: []string{
		`1:1|a"b|c||`,
		`2:2||[1,{"z":null}]|`,
		"4:-3e5|日本|| ",
	}}
	array := "[{\"id\":1,\"name\":\"a\\\"b|c\"},\n{\"id\":2,\"x\":{\"y\":[1,{\"z\":null}]}},\n\n{\"id\":-3e5,\"name\":\"日本\",\"x\":{\"z\":\" \"}}]"
	ndjson := "{\"id\":1,\"name\":\"a\\\"b|c\"}\n{\"id\":2,\"x\":{\"y\":[1,{\"z\":null}]}}\n\n{\"id\":-3e5,\"name\":\"日本\",\"x\":{\"z\":\" \"}}\n"
	yml := "- {id: 1, name: \"a\\\"b|c\"}\n- id: 2\n  x: {y: [1, {z: null}]}\n- {id: -3e5, name: 日本, x: {z: \" \"}}\n"
	for _, c := range []struct {
		file, data string
		opts       source.Options
	}{
		{"a.json", array, source.Options{}},
		{"a.ndjson", ndjson, source.Options{}},
		{"a.JSONL.gz", ndjson, source.Options{}},
		{"a.txt", ndjson, source.Options{Format: "ndjson"}},
	} {
		t.Run(c.file, func(t *testing.T) {
			if got := read(t, write(t, c.file, c.data), c.opts); !reflect.DeepEqual(got, want) {
				t.Errorf("got  %#v\nwant %#v", got, want)
			}
		})
	}
	t.Run("yaml", func(t *testing.T) {
		w := want
		w.Rows = []string{want.Rows[0], "2:2||[1,{\"z\":null}]|", "4:-3e5|日本|| "}
		if got := read(t, write(t, "a.yaml", yml), source.Options{}); !reflect.DeepEqual(got, w) {
			t.Errorf("got  %#v\nwant %#v", got, w)
		}
	})
}

// laughs is a YAML alias bomb: its last row expands to 10^7 strings.
const laughs = `a: &a [x, x, x, x, x, x, x, x, x, x]
b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]
c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]
d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]
e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]
f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]
g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]
h: [*g, *g, *g, *g, *g, *g, *g, *g, *g, *g]
`

func TestErrors(t *testing.T) {
	for _, c := range []struct {
		file, data string
		want       sourcetest.Result
	}{
		{"e.json", "{\"a\": 1,\n \"b\": {\"c\": tru}}", sourcetest.Result{Errs: []string{"open: :2:13: invalid character '}' in literal true (expecting 'e')"}}},
		{"e.json", "{\"a\": 1,\n \"b\": {\"c\": 1}", sourcetest.Result{Errs: []string{"open: :2:15: unexpected EOF"}}},
		{"e.json", `{"a":"\q"}`, sourcetest.Result{Errs: []string{"open: :1:6: invalid character 'q' in string escape code"}}},
		{"e.json", "", sourcetest.Result{Errs: []string{"open: : the document is empty"}}},
		{"e.json", "{}", sourcetest.Result{Errs: []string{"open: : the document has no rows to take the columns from (give them as a header)"}}},
		{"e.json", ` "x"`, sourcetest.Result{Errs: []string{"open: :1:2: the document is a string; want an object (a dictionary) or an array of objects"}}},
		{"e.json", `{"a":1} x`, sourcetest.Result{Errs: []string{"open: :1:9: invalid character 'x' looking for beginning of value"}}},
		{"e.json", `{"a":1} {}`, sourcetest.Result{Errs: []string{"open: :1:9: an object after the end of the document"}}},
		{"e.json", strings.Repeat("[", 2000), sourcetest.Result{Errs: []string{"open: :1:1002: values nest more than 1000 deep"}}},
		{"e.json", "[{\"a\":1},\n 5, {\"a\":2, \"a\":3}, {\"b\":1}, [2]]", sourcetest.Result{
			Columns: []string{"a", "b"},
			Rows:    []string{"1:1|", "2:|1"},
			Errs: []string{
				":2:2: the row is a number, not an object",
				`:2:13: column "a" is given twice in the row`,
				":2:30: the row is an array, not an object",
			}}},
		{"e.json", `{"a": {"b": 1, "b.c": 2, "b": {"c": 3}}}`, sourcetest.Result{
			Columns: []string{"key", "b", "b.c"},
			Errs:    []string{`:1:32: column "b.c" is given twice in the row`}}},
		{"e.json", `{"a": {"key": 1}}`, sourcetest.Result{
			Columns: []string{"key"},
			Errs:    []string{`:1:8: column "key" is given twice in the row`}}},
		// An NDJSON line that is not one object is a bad row of its own.
		{"e.ndjson", "{\"a\":1}\n{\"a\":2", sourcetest.Result{Columns: []string{"a"}, Rows: []string{"1:1"}, Errs: []string{":2:7: unexpected EOF"}}},
		{"e.ndjson", "{\"a\":1}\n]", sourcetest.Result{Columns: []string{"a"}, Rows: []string{"1:1"}, Errs: []string{":2:1: invalid character ']' looking for beginning of value"}}},
		{"e.yaml", "a: 1\nb: [1,\n", sourcetest.Result{Errs: []string{"open: :2: did not find expected node content"}}},
		{"e.yaml", "a: 1\n---\nb: 2\n", sourcetest.Result{Errs: []string{"open: :2:1: a second document; a YAML source holds one"}}},
		{"e.yaml", "just text", sourcetest.Result{Errs: []string{"open: :1:1: the document is a scalar; want a mapping (a dictionary) or a sequence of mappings"}}},
		{"e.yaml", "# nothing\n", sourcetest.Result{Errs: []string{"open: : the document is empty"}}},
		{"e.yaml", "- a: 1\n- 5\n- {a: 2, a: 3}\n- {[x]: 1}\n- {<<: {a: 4}}\n", sourcetest.Result{
			Columns: []string{"a"},
			Rows:    []string{"1:1"},
			Errs: []string{
				":2:3: the row is a scalar, not a mapping",
				`:3:13: column "a" is given twice in the row`,
				":4:4: a field name must be a scalar (merge keys are not supported)",
				":5:4: a field name must be a scalar (merge keys are not supported)",
			}}},
		{"e.yaml", "a: &x [*x]\n", sourcetest.Result{Errs: []string{"open: :1:4: values nest more than 1000 deep"}}},
		{"e.yaml", laughs, sourcetest.Result{Errs: []string{"open: :5:4: aliases expand the document more than 16 times over"}}},
	} {
		t.Run(c.data, func(t *testing.T) {
			if got := read(t, write(t, c.file, c.data), source.Options{}); !reflect.DeepEqual(got, c.want) {
				t.Errorf("got  %#v\nwant %#v", got, c.want)
			}
		})
	}
	if _, err := source.Open(filepath.Join(t.TempDir(), "missing.json"), source.Options{}); err == nil || !strings.Contains(err.Error(), "missing.json") {
		t.Errorf("missing file: %v", err)
	}
	bad := write(t, "bad.json.gz", "")
	if err := os.WriteFile(bad, []byte("\x1f\x8bnot gzip"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := source.Open(bad, source.Options{}); err == nil || !strings.HasPrefix(err.Error(), bad+": gzip") {
		t.Errorf("bad gzip: %v", err)
	}
}

// TestJSONStreams reads a large dictionary and checks that the reader
// holds a bounded amount of memory, far less than the file: it streams
// instead of decoding the whole document.
func TestJSONStreams(t *testing.T) {
	const n = 300_000
	path := filepath.Join(t.TempDir(), "big.json")
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	f := bufio.NewWriter(out)
	fmt.Fprint(f, "{")
	for i := range n {
		if i > 0 {
			fmt.Fprint(f, ",\n")
		}
		fmt.Fprintf(f, `"host-%07d": {"owner": "team %d", "tier": %d, "note": "%s"}`, i, i%97, i%3, strings.Repeat("x", 40))
	}
	fmt.Fprint(f, "}")
	if err := f.Flush(); err != nil {
		t.Fatal(err)
	}
	out.Close()
	fi, _ := os.Stat(path)
	r, err := source.Open(path, source.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var peak uint64
	var ms runtime.MemStats
	rows := 0
	for {
		fields, err := r.Next()
		if err != nil {
			break
		}
		if rows%50_000 == 0 {
			runtime.GC()
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapAlloc)
			if want := fmt.Sprintf("host-%07d", rows); string(fields[0]) != want {
				t.Fatalf("row %d key %q", rows, fields[0])
			}
		}
		rows++
	}
	if rows != n {
		t.Fatalf("read %d rows, want %d", rows, n)
	}
	t.Logf("file %d MB, peak heap sampled %d KB", fi.Size()>>20, peak>>10)
	if peak > uint64(fi.Size())/4 {
		t.Errorf("heap %d bytes while reading a %d-byte file: the reader does not stream", peak, fi.Size())
	}
}

// TestColumnLimit: a document may not make more than 10000 columns.
func TestColumnLimit(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"a": 1}` + "\n{")
	for i := range 10001 {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"f%d": 1`, i)
	}
	b.WriteString("}\n")
	got := read(t, write(t, "wide.ndjson", b.String()), source.Options{})
	if want := []string{"open: :2:108881: more than 10000 columns"}; !reflect.DeepEqual(got.Errs, want) {
		t.Errorf("errors %.300q, want %q", got.Errs, want)
	}
}

// TestJSONColumnTypes: the first pass types each column by the JSON
// values it holds (source.Typed): numbers, booleans, arrays and objects
// kept as JSON, mixes of those (json), and text as soon as one value is
// a string; null counts for nothing, and a column of nulls is text.
func TestJSONColumnTypes(t *testing.T) {
	doc := `[{"k": "a", "n": 1.50, "b": true, "j": [1], "m": 1, "s": 2, "z": null},
 {"k": "b", "n": -2e3, "b": false, "j": {"x": 1}, "m": true, "s": "two", "z": null},
 {"k": "c", "n": null}]`
	path := filepath.Join(t.TempDir(), "t.json")
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		opts source.Options
		want []string
	}{
		{source.Options{Nested: source.NestedJSON}, []string{"", "number", "bool", "json", "json", "", ""}},
		{source.Options{Nested: source.NestedJSON, Header: []string{"k", "n", "b", "j", "m", "s", "z"}}, []string{"", "", "", "", "", "", ""}},
	} {
		r, err := source.Open(path, tc.opts)
		if err != nil {
			t.Fatal(err)
		}
		typed, ok := r.(source.Typed)
		if !ok {
			t.Fatal("the JSON reader is not a source.Typed")
		}
		if got := typed.ColumnTypes(); !slices.Equal(got, tc.want) || !slices.Equal(r.Columns(), []string{"k", "n", "b", "j", "m", "s", "z"}) {
			t.Errorf("header %v: columns %v typed %q, want %q", tc.opts.Header, r.Columns(), got, tc.want)
		}
		r.Close()
	}
}

// TestFinalErrors: a fault that ends a document (a syntax error, values
// nested too deep) is a final *source.RowError at its
// position: a data error, which reading does not go past.
func TestFinalErrors(t *testing.T) {
	for _, c := range []struct {
		file, data string
		header     []string
		want       sourcetest.Result
	}{
		{"f.json", "[{\"a\":1},\n {\"a\":2,}, {\"a\":3}]", []string{"a"}, sourcetest.Result{Columns: []string{"a"},
			Rows: []string{"1:1"},
			Errs: []string{"final: :2:9: invalid character '}' looking for beginning of object key string"}}},
		{"f.json", "{\"x\": 1,\n \"y\": 2} 3", []string{"key", "value"}, sourcetest.Result{Columns: []string{"key", "value"},
			Rows: []string{"1:x|1", "2:y|2"},
			Errs: []string{"final: :2:10: a number after the end of the document"}}},
		{"f.yaml", "a: 1\nb: &x [*x]\nc: 2\n", []string{"key", "value"}, sourcetest.Result{Columns: []string{"key", "value"},
			Rows: []string{"1:a|1"},
			Errs: []string{"final: :2:4: values nest more than 1000 deep"}}},
	} {
		t.Run(c.data, func(t *testing.T) {
			if got := read(t, write(t, c.file, c.data), source.Options{Header: c.header, Nested: source.NestedJSON}); !reflect.DeepEqual(got, c.want) {
				t.Errorf("got  %#v\nwant %#v", got, c.want)
			}
		})
	}
	// Found by the first pass, the fault fails Open, still as a final
	// row error.
	_, err := source.Open(write(t, "f.json", "[{\"a\":1},\n {\"a\":2,}]"), source.Options{})
	var re *source.RowError
	if !errors.As(err, &re) || !re.Final || re.Line != 2 || re.Column != 9 || source.Skippable(err) {
		t.Errorf("open: %#v", err)
	}
}

// TestNDJSONLines: each NDJSON line is decoded on its own, so that a bad
// line is a bad row at that line (not at the next one, where a stream
// decoder finds out) and the lines after it are read as if it were not
// there.
func TestNDJSONLines(t *testing.T) {
	long := strings.Repeat("x", 200<<10) // longer than the read buffer
	for _, c := range []struct {
		name, data string
		want       sourcetest.Result
	}{
		{"unclosed object", "{\"id\":1,\"n\":\"a\"}\n{\"id\":2,\"n\":\"b\"\n{\"id\":3,\"n\":\"c\"}\n", sourcetest.Result{
			Columns: []string{"id", "n"}, Rows: []string{"1:1|a", "3:3|c"}, Errs: []string{":2:16: unexpected EOF"}}},
		{"two objects on a line", "{\"id\":1} {\"id\":2}\n{\"id\":3}", sourcetest.Result{
			Columns: []string{"id"}, Rows: []string{"2:3"}, Errs: []string{":1:10: an object after the row's object"}}},
		{"junk after the object", "{\"id\":1},\r\n{\"id\":2}\r\n", sourcetest.Result{
			Columns: []string{"id"}, Rows: []string{"2:2"}, Errs: []string{":1:9: invalid character ',' looking for beginning of value"}}},
		{"object over two lines", "{\"id\":\n1}\n{\"id\":2}\n", sourcetest.Result{
			Columns: []string{"id"}, Rows: []string{"3:2"}, Errs: []string{":1:7: unexpected EOF", ":2:1: the row is a number, not an object"}}},
		{"blank lines and a long one", "\n  \t\r\n{\"id\":1,\"n\":\"" + long + "\"}\n\n{\"id\":2}", sourcetest.Result{
			Columns: []string{"id", "n"}, Rows: []string{"3:1|" + long, "5:2|"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := read(t, write(t, "l.ndjson", c.data), source.Options{}); !reflect.DeepEqual(got, c.want) {
				t.Errorf("got  %.500q\nwant %.500q", got, c.want)
			}
		})
	}
}

// TestYAMLErrorLines: a YAML syntax error names the line where the fault,
// or the construct it is in, starts. The library counts the lines of its
// parser's errors from 0 and those of its scanner's from 1; the end of
// the input is on the last line.
func TestYAMLErrorLines(t *testing.T) {
	for _, c := range []struct{ data, want string }{
		{"- id: 1\n  n: a\n- id: 2\n  n: [1, 2\n", ":4: did not find expected ',' or ']'"}, // the open '['
		{"x: 1\ny: {a: 1\n", ":2: did not find expected ',' or '}'"},
		{"x: 1\na:\n  b: 1\n c: 2\n", ":4: did not find expected key"},
		{"x: 1\n- a\n", ":2: did not find expected key"},
		{"x: 1\ny: !foo!bar 1\n", ":2: found undefined tag handle"},
		{"[1, 2", ":1: did not find expected ',' or ']'"},
		{"a: 1\nb: \"x\n", ":2: found unexpected end of stream"}, // scanner errors
		{"x: 1\na: b: c\n", ":2: mapping values are not allowed in this context"},
		{"a: b: c\n", ":1: mapping values are not allowed in this context"},
		{"x: 1\n\ty: 2\n", ":2: found a tab character that violates indentation"},
		{"x: &x 1\ny: [*x, *nope]\n", ":2:9: unknown anchor 'nope' referenced"},
	} {
		path := write(t, "e.yaml", c.data)
		_, err := source.Open(path, source.Options{})
		var re *source.RowError
		if !errors.As(err, &re) || !re.Final || strings.TrimPrefix(err.Error(), path) != c.want {
			t.Errorf("%q: %v, want the final row error %q", c.data, err, c.want)
		}
	}
}

// TestInvalidUTF8: JSON text is UTF-8, and encoding/json reads other
// bytes as U+FFFD without a word. A byte that is not UTF-8 is an error at
// its line and column, naming what it is in: a bad row for an NDJSON
// line, the end of a JSON document.
func TestInvalidUTF8(t *testing.T) {
	for _, c := range []struct {
		file, data string
		opts       source.Options
		want       sourcetest.Result
	}{
		{"u.ndjson", "{\"id\":1,\"n\":\"a\"}\n{\"id\":2,\"n\":\"\xff\"}\n{\"id\":3,\"n\":\"c\"}\n", source.Options{}, sourcetest.Result{
			Columns: []string{"id", "n"}, Rows: []string{"1:1|a", "3:3|c"}, Errs: []string{`:2:14: invalid UTF-8 in field "n"`}}},
		{"u.ndjson", "{\"id\":1,\"g\":{\"c\":\"K\xc3\xb6ln \xc3\"}}\n{\"id\":2,\"\xe2\x82\":1}\n{\"id\":3,\"g\":\xfe}\n{\"id\":4}", source.Options{}, sourcetest.Result{
			Columns: []string{"id"}, Rows: []string{"4:4"}, Errs: []string{
				`:1:25: invalid UTF-8 in field "g.c"`,
				":2:10: invalid UTF-8 in a field name",
				`:3:13: invalid UTF-8 in field "g"`,
			}}},
		{"u.ndjson", "{\"id\":1,\"t\":[\"a\",{\"x\":\"\xf0\x9f\x9a\"}]}\n{\"id\":2}\n", source.Options{Nested: source.NestedJSON}, sourcetest.Result{
			Columns: []string{"id"}, Rows: []string{"2:2"}, Errs: []string{`:1:24: invalid UTF-8 in field "t"`}}},
		{"u.json", "[{\"id\":1,\"n\":\"a\"},\n {\"id\":2,\"n\":\"x\xffy\"}]", source.Options{}, sourcetest.Result{
			Errs: []string{`open: :2:16: invalid UTF-8 in field "n"`}}},
		{"u.json", "[{\"id\":1,\"n\":\"a\"},\n {\"id\":2,\"n\":\"x\xffy\"}]", source.Options{Header: []string{"id", "n"}}, sourcetest.Result{
			Columns: []string{"id", "n"}, Rows: []string{"1:1|a"}, Errs: []string{`final: :2:16: invalid UTF-8 in field "n"`}}},
		{"u.json.gz", "{\"a\": 1,\n \"b\xff\": 2}", source.Options{}, sourcetest.Result{
			Errs: []string{"open: :2:4: invalid UTF-8 in the key"}}},
		{"u.json", "{\"a\": {\"x\": 1}, \"b\": {\"x\": \xc0\xaf}}", source.Options{}, sourcetest.Result{
			Errs: []string{`open: :1:28: invalid UTF-8 in field "x"`}}},
		{"u.json", "[{\"a\": \"x\xe2\x82\"}]", source.Options{}, sourcetest.Result{
			Errs: []string{`open: :1:10: invalid UTF-8 in field "a"`}}},
		// YAML text is UTF-8 (or UTF-16) without control characters: the
		// library refuses other bytes, naming no line.
		{"u.yaml", "- id: 1\n  n: a\n- id: 2\n  n: \"x\xffy\"\n", source.Options{}, sourcetest.Result{
			Errs: []string{"open: :4:8: invalid UTF-8"}}},
		{"u.yml.gz", "a: 1\nb: K\xc3\xb6ln\x01\n", source.Options{}, sourcetest.Result{
			Errs: []string{"open: :2:9: control character U+0001, which YAML does not allow"}}},
		{"u.yaml", "a: 1\nb: \xc2\x9b\n", source.Options{}, sourcetest.Result{
			Errs: []string{"open: :2:4: control character U+009B, which YAML does not allow"}}},
		{"u.yaml", "\xff\xfea\x00:\x00 \x001\x00\n\x00", source.Options{}, sourcetest.Result{ // UTF-16
			Columns: []string{"key", "value"}, Rows: []string{"1:a|1"}}},
		// UTF-8 where JSON has no place for it is a syntax error.
		{"u.json", "[{\"a\": 1}]\n\u00e9", source.Options{}, sourcetest.Result{
			Errs: []string{"open: :2:1: invalid character 'Ã' looking for beginning of value"}}},
	} {
		t.Run(c.data, func(t *testing.T) {
			if got := read(t, write(t, c.file, c.data), c.opts); !reflect.DeepEqual(got, c.want) {
				t.Errorf("got  %q\nwant %q", got, c.want)
			}
		})
	}
}
