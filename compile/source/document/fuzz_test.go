package document_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"unicode/utf8"

	"github.com/lutkit/lutkit/compile/source"
)

// fuzzRead reads data as the file path with every nested policy and
// checks what a reader promises: no panic, every row as wide as the
// columns, a row error placed in the file, an end, and an error for
// input that is not UTF-8 (a document in UTF-16 aside). A worker runs one
// input at a time, so each target rewrites one file of its own directory
// (a directory made and removed per input took most of each run).
func fuzzRead(t *testing.T, path string, data []byte) {
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	// Bytes that are not UTF-8 are an error somewhere (gzip data is
	// checked once decompressed; YAML may be UTF-16).
	mustFail := !utf8.Valid(data) && !bytes.HasPrefix(data, []byte{0x1f, 0x8b}) &&
		!bytes.HasPrefix(data, []byte{0xfe, 0xff}) && !bytes.HasPrefix(data, []byte{0xff, 0xfe})
	for _, nested := range []string{source.NestedFlatten, source.NestedJSON} {
		r, err := source.Open(path, source.Options{Nested: nested})
		if err != nil {
			continue
		}
		failed := false
		var prevLine int64
		var prevCol int
		cols := r.Columns()
		if len(cols) == 0 {
			t.Fatal("a reader without columns")
		}
		for i := 0; ; i++ {
			if i > len(data)+1 {
				t.Fatal("more rows than bytes")
			}
			fields, err := r.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			var re *source.RowError
			if err != nil {
				failed = true
			}
			if errors.As(err, &re) {
				if re.Line < 1 || re.Line != r.Line() {
					t.Fatalf("row error at line %d, Line() %d: %v", re.Line, r.Line(), err)
				}
				if re.Final {
					break
				}
				continue
			}
			if err != nil {
				break
			}
			if len(fields) != len(cols) {
				t.Fatalf("row of %d fields, %d columns", len(fields), len(cols))
			}
			// Every field is placed, and a row's first field after the
			// rows before it (compile keeps the rows in that order).
			vp := r.(source.ValuePositioner)
			for i := range cols {
				if line, col := vp.ValuePos(i); line < 1 || col < 1 {
					t.Fatalf("field %d of the row at line %d placed at %d:%d", i, r.Line(), line, col)
				}
			}
			line, col := vp.ValuePos(0)
			if line < prevLine || line == prevLine && col <= prevCol {
				t.Fatalf("row at %d:%d, after one at %d:%d", line, col, prevLine, prevCol)
			}
			prevLine, prevCol = line, col
		}
		r.Close()
		if mustFail && !failed {
			t.Fatalf("%q is not UTF-8, and it read without an error", data)
		}
	}
}

func FuzzJSON(f *testing.F) {
	f.Add([]byte(dictJSON))
	f.Add([]byte(`[{"a":1,"b":{"c":[1,{"d":null}]}},{"a":"x\u00e9"}]`))
	f.Add([]byte(`{"k":{"key":1}}`))
	f.Add([]byte(`[[[{"a":1}]]]`))
	f.Add([]byte("[{\"a\":\"x\xe2\x82\"},{\"b\":1}]"))
	path := filepath.Join(f.TempDir(), "f.json")
	f.Fuzz(func(t *testing.T, data []byte) { fuzzRead(t, path, data) })
}

func FuzzNDJSON(f *testing.F) {
	f.Add([]byte("{\"id\":1,\"n\":\"a\"}\n{\"id\":2,\"x\":{\"y\":[1]}}\n"))
	f.Add([]byte("{\"id\":1,\"n\":\"\xff\"}\n{\"id\":2,\"\xe2\x82\":1}\n"))
	f.Add([]byte("{\"a\":1}\n5\n{\"a\":2,\"a\":3}\n"))
	path := filepath.Join(f.TempDir(), "f.ndjson")
	f.Fuzz(func(t *testing.T, data []byte) { fuzzRead(t, path, data) })
}

func FuzzYAML(f *testing.F) {
	f.Add([]byte(dictYAML))
	f.Add([]byte("- {id: 1, name: \"a\"}\n- id: 2\n  x: {y: [1, {z: null}]}\n"))
	f.Add([]byte(laughs))
	f.Add([]byte("a: &x [*x]\n"))
	path := filepath.Join(f.TempDir(), "f.yaml")
	f.Fuzz(func(t *testing.T, data []byte) { fuzzRead(t, path, data) })
}
