package tablesyaml

import (
	"errors"
	"strings"
	"testing"

	"github.com/lutkit/lutkit/tables"
)

func TestConfigExamples(t *testing.T) {
	cfg, err := LoadConfig("../../examples/tables.yaml")
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[tables.Kind]int{}
	for _, tc := range cfg.Tables {
		kinds[tc.Kind]++
	}
	if kinds[tables.KindLUT] == 0 || kinds[tables.KindMMDB] == 0 {
		t.Errorf("examples/tables.yaml should hold a table of each kind: %v", kinds)
	}
}

func TestConfigValidation(t *testing.T) {
	const yml = `version: 1
tables:
  - name: customers
    sources: [customers.csv]
    keys: Index
  - name: customers
    sources: [a.csv]
    key: id
  - name: geo
    kind: mmdb
    record_size: 30
    sources:
      - path: ranges.csv
        type: ranges
        start_column: start
        merge: sideways
  - name: two
    sources: [a.csv, b.csv]
    key: id
  - name: "bad name!"
    sources: [x.csv]
  - name: kinds
    kind: parquet
  - name: dup
    on_duplicate: sometimes
    fold_case: maybe
    key: k
    sources:
      - path: x.db
        sqlite_table: t
        sqlite_query: select 1
`
	_, err := ParseConfig("tables.yaml", []byte(yml))
	var ce ConfigErrors
	if !errors.As(err, &ce) {
		t.Fatalf("want ConfigErrors, got %v", err)
	}
	want := []string{
		`tables.yaml:5:5: table "customers": keys: unknown field`,
		`tables.yaml:3:5: table "customers": key: missing`,
		`tables.yaml:6:5: table "customers": name: declared twice (first at line 3)`,
		`tables.yaml:11:18: table "geo": record_size: must be 24, 28 or 32, not 30`,
		`table "geo": sources[0]: a ranges source needs start_column and end_column`,
		`table "geo": sources[0].merge: unknown merge mode "sideways"`,
		`tables.yaml:18:14: table "two": sources: a .lut table has exactly one source, not 2`,
		`table "bad name!": name: must be`,
		`tables.yaml:23:11: table "kinds": kind: unknown kind "parquet" (want lut or mmdb)`,
		`table "dup": on_duplicate: unknown duplicate policy "sometimes"`,
		`table "dup": fold_case: must be true or false, not "maybe"`,
		`table "dup": sources[0]: give sqlite_table or sqlite_query, not both`,
	}
	msg := err.Error()
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("missing error %q", w)
		}
	}
	if t.Failed() {
		t.Logf("errors:\n%s", msg)
	}
	for _, e := range ce {
		if e.Line == 0 {
			t.Errorf("error without a line: %v", e)
		}
	}
}

func TestConfigFileLevel(t *testing.T) {
	for _, c := range []struct{ yml, want string }{
		{"", "the file is empty"},
		{"tables: [", "not valid YAML"},
		{"- a\n- b\n", "the top level must be a mapping"},
		{"version: 2\ntables: []\n", "unsupported version 2"},
		{"tabels: []\n", "tabels: unknown field"},
		{"tables: {}\n", "tables: must be a list"},
	} {
		_, err := ParseConfig("t.yaml", []byte(c.yml))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want %q", c.yml, err, c.want)
		}
	}
}

// TestConfigColumnTypes: column_types is a mapping of column to type; an
// unknown type is an error of that key.
func TestConfigColumnTypes(t *testing.T) {
	cfg, err := ParseConfig("tables.yaml", []byte("version: 1\ntables:\n  - name: prices\n    sources: [p.csv]\n    key: sku\n    column_types: {price: number, active: bool}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Tables[0].LUT.ColumnTypes; len(got) != 2 || got["price"] != "number" || got["active"] != "bool" {
		t.Errorf("column_types: %v", got)
	}
	_, err = ParseConfig("tables.yaml", []byte("version: 1\ntables:\n  - name: prices\n    sources: [p.csv]\n    key: sku\n    column_types: {price: float}\n"))
	if err == nil || !strings.Contains(err.Error(), `column_types: column "price": unknown column type "float"`) {
		t.Errorf("column_types with an unknown type: %v", err)
	}
}

// TestConfigMatch: match: takes a match kind; an unknown one is an error
// of its key, and a suffix table has one key column.
func TestConfigMatch(t *testing.T) {
	cfg, err := ParseConfig("tables.yaml", []byte("version: 1\ntables:\n  - name: ioc\n    sources: [ioc.csv]\n    key: domain\n    match: suffix\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Tables[0].LUT.Match; got != "suffix" {
		t.Errorf("match: %q", got)
	}
	_, err = ParseConfig("tables.yaml", []byte("version: 1\ntables:\n  - name: ioc\n    sources: [ioc.csv]\n    key: domain\n    match: regex\n"))
	if err == nil || !strings.Contains(err.Error(), `match: unknown match kind "regex"`) {
		t.Errorf("match: regex: %v", err)
	}
	_, err = ParseConfig("tables.yaml", []byte("version: 1\ntables:\n  - name: ioc\n    sources: [ioc.csv]\n    key: [a, b]\n    match: suffix\n"))
	if err == nil || !strings.Contains(err.Error(), "one key column") {
		t.Errorf("match: suffix with two key columns: %v", err)
	}
}
