package compile

import (
	"os"
	"path/filepath"
	"strings"
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

// TestDocumentDuplicatePlaces: a duplicate key of a JSON, NDJSON or YAML
// source is placed at the second row's key (where its field starts in
// JSON and NDJSON, where its value starts in YAML), not at the row's
// first line or its field number, and its text names both rows' lines,
// or their columns when they share a line, as a one-line JSON array or a
// YAML flow sequence has them.
func TestDocumentDuplicatePlaces(t *testing.T) {
	for _, tc := range []struct {
		name, file, text string
		line             int64
		column           int
		want             string
	}{
		{"JSON array", "t.json", "[\n  {\"v\": \"1\", \"k\": \"a\"},\n  {\"v\": \"2\", \"k\": \"b\"},\n  {\"v\": \"3\",\n   \"k\": \"a\"}\n]\n",
			5, 4, `duplicate key "a" at lines 2 and 5 `},
		{"JSON array on one line", "t.json", `[{"k": "a"}, {"k": "b"}, {"k": "a"}]`,
			1, 27, `duplicate key "a" at line 1, columns 3 and 27 `},
		{"JSON rows without the key", "t.json", `[{"k": "x"}, {"v": "1"}, {"v": "2"}]`,
			1, 26, `duplicate key "" at line 1, columns 14 and 26 `}, // where the rows start
		{"JSON dictionary", "t.json", "{\"a\": {\"v\": 1},\n \"b\": {\"v\": 2}, \"a\": {\"v\": 3}}",
			2, 17, `duplicate key "a" at lines 1 and 2 `},
		{"NDJSON", "t.ndjson", "{\"v\": \"1\", \"k\": \"a\"}\n\n{\"v\": \"2\", \"k\": \"b\"}\n  {\"v\": \"3\", \"k\": \"a\"}\n",
			4, 14, `duplicate key "a" at lines 1 and 4 `},
		{"YAML sequence", "t.yaml", "- v: \"1\"\n  k: a\n- v: \"2\"\n  k: b\n- v: \"3\"\n  k:   a\n",
			6, 8, `duplicate key "a" at lines 2 and 6 `},
		{"YAML flow sequence", "t.yaml", "[{k: a}, {k: b}, {v: 1, k: a}]\n",
			1, 28, `duplicate key "a" at line 1, columns 6 and 28 `},
		{"YAML alias", "t.yaml", "- {k: &x a}\n- {v: 1, k: *x}\n",
			2, 13, `duplicate key "a" at lines 1 and 2 `},
		{"YAML mapping", "t.yaml", "a: 1\nb: 2\na: 3\n",
			3, 1, `duplicate key "a" at lines 1 and 3 `},
	} {
		key := "k"
		if strings.Contains(tc.name, "dictionary") || strings.Contains(tc.name, "mapping") {
			key = "key"
		}
		_, _, err := compileDocument(t, tc.file, tc.text, Options{Key: []string{key}})
		rowErrorAt(t, err, tc.line, tc.column, tc.name)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
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

// TestDocumentOverlapPlaces: overlapping ranges of a JSON document on one
// line are placed at the second row's from field, by its byte column, and
// name the first row's; overlapping validities of one key, at the line of
// the second row's key.
func TestDocumentOverlapPlaces(t *testing.T) {
	_, _, err := compileDocument(t, "t.json", `[{"n": "x", "from": 1, "to": 9}, {"n": "y", "from": 5, "to": 12}]`,
		Options{Match: MatchRange, RangeColumns: []string{"from", "to"}})
	rowErrorAt(t, err, 1, 45, "ranges")
	if err == nil || !strings.Contains(err.Error(), "[1, 9] of the row at t.json:1:13 ") {
		t.Errorf("ranges: %v, want the first row at t.json:1:13", err)
	}
	_, _, err = compileDocument(t, "t.yaml", "- {k: a, vf: 2020-01-01T00:00:00Z}\n- {k: a, vf: 2021-01-01T00:00:00Z}\n",
		Options{Key: []string{"k"}, ValidFrom: "vf"})
	rowErrorAt(t, err, 2, 0, "validities")
	if err == nil || !strings.Contains(err.Error(), "of the row at t.yaml:1 ") {
		t.Errorf("validities: %v, want the first row at t.yaml:1", err)
	}
}
