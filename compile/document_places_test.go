package compile

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/lutkit/lutkit/compile/source"
	_ "github.com/lutkit/lutkit/compile/source/document" // JSON, NDJSON and YAML
	"github.com/lutkit/lutkit/reader"
)

// compileDocument writes text to a file of that name and compiles it
// with opts, naming the file in errors; it returns the table's path.
func compileDocument(t *testing.T, name, text string, opts Options) (string, *Stats, error) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	src, err := source.Open(path, source.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	opts.SourceName = name
	out := filepath.Join(dir, "t.lut")
	st, err := File(src, out, opts)
	return out, st, err
}

// TestDocumentRowsOnOneLine: rows of a JSON array on one line, or of a
// YAML flow sequence, keep their order: --on-duplicate first keeps the
// first row of a key and last its last (neither both rows, nor none), and
// the validities of the rows of a range table bounded in time stay each
// its row's.
func TestDocumentRowsOnOneLine(t *testing.T) {
	docs := map[string]string{
		"t.json": `[{"k": "a", "v": "1"}, {"k": "b", "v": "2"}, {"k": "a", "v": "3"}, {"k": "a", "v": "4"}]`,
		"t.yaml": "[{k: a, v: 1}, {k: b, v: 2}, {k: a, v: 3}, {k: a, v: 4}]\n",
	}
	for name, text := range docs {
		for policy, want := range map[string]string{DuplicateFirst: "1", DuplicateLast: "4"} {
			path, st, err := compileDocument(t, name, text, Options{Key: []string{"k"}, OnDuplicate: policy})
			if err != nil {
				t.Errorf("%s, %s: %v", name, policy, err)
				continue
			}
			if st.Rows != 2 || st.Duplicates != 2 {
				t.Errorf("%s, %s: %d rows, %d duplicates; want 2 and 2", name, policy, st.Rows, st.Duplicates)
			}
			tab, err := reader.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			var row reader.Row
			for key, v := range map[string]string{"a": want, "b": "2"} {
				if !tab.Get([]byte(key), &row) {
					t.Errorf("%s, %s: %s is not in the table", name, policy, key)
				} else if string(row.Col(1)) != v {
					t.Errorf("%s, %s: %s gives %q, want %q", name, policy, key, row.Col(1), v)
				}
			}
			tab.Close()
		}
	}

	// One range, valid in 2020 in one row and in 2021 in the next.
	text := `[{"from": 1, "to": 9, "vf": "2020-01-01T00:00:00Z", "vt": "2021-01-01T00:00:00Z", "n": "old"}, ` +
		`{"from": 1, "to": 9, "vf": "2021-01-01T00:00:00Z", "vt": "2022-01-01T00:00:00Z", "n": "new"}]`
	path, _, err := compileDocument(t, "t.json", text, Options{Match: MatchRange, RangeColumns: []string{"from", "to"}, ValidFrom: "vf", ValidTo: "vt"})
	if err != nil {
		t.Fatalf("range table bounded in time: %v", err)
	}
	tab, err := reader.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer tab.Close()
	for at, want := range map[int64]string{1590969600: "old", 1622505600: "new"} { // June 2020, June 2021
		if v, ok := tab.LookupRangeAt(5, at); !ok || string(v.Col(4)) != want {
			t.Errorf("5 at %d: %q, %v; want %q", at, v.Col(4), ok, want)
		}
	}
}
