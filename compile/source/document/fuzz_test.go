package document_test

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/lutkit/lutkit/compile/source"
)

// fuzzRead reads data as the file path with every nested policy and
// checks what a reader promises: no panic, every row as wide as the
// columns, a row error placed in the file, and an end. A worker runs one
// input at a time, so each target rewrites one file of its own directory
// (a directory made and removed per input took most of each run).
func fuzzRead(t *testing.T, path string, data []byte) {
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, nested := range []string{source.NestedFlatten, source.NestedJSON} {
		r, err := source.Open(path, source.Options{Nested: nested})
		if err != nil {
			continue
		}
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
		}
		r.Close()
	}
}

func FuzzJSON(f *testing.F) {
	f.Add([]byte(dictJSON))
	f.Add([]byte(`[{"a":1,"b":{"c":[1,{"d":null}]}},{"a":"x\u00e9"}]`))
	f.Add([]byte(`{"k":{"key":1}}`))
	f.Add([]byte(`[[[{"a":1}]]]`))
	path := filepath.Join(f.TempDir(), "f.json")
	f.Fuzz(func(t *testing.T, data []byte) { fuzzRead(t, path, data) })
}

func FuzzNDJSON(f *testing.F) {
	f.Add([]byte("{\"id\":1,\"n\":\"a\"}\n{\"id\":2,\"x\":{\"y\":[1]}}\n"))
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
