package source_test

import (
	"encoding/json"
	"testing"

	"github.com/lutkit/lutkit/compile/source"
)

func TestOptionsValidate(t *testing.T) {
	o := source.Options{Format: "xml", Delimiter: '"', Header: []string{"a", "a"}, SQLiteTable: "t", SQLiteQuery: "select 1"}
	err := o.Validate()
	want := `format: unknown format "xml" (want csv, tsv, sqlite, parquet or arrow)
delimiter: invalid delimiter '"'
header: duplicate column name "a" (columns 1 and 2)
give sqlite_table or sqlite_query, not both`
	if err == nil || err.Error() != want {
		t.Errorf("got\n%v\nwant\n%s", err, want)
	}
	for _, f := range []string{"", "CSV", "tsv", "sqlite", "parquet", "arrow"} {
		if err := (&source.Options{Format: f}).Validate(); err != nil {
			t.Errorf("format %q: %v", f, err)
		}
	}
}

func TestDelimiterText(t *testing.T) {
	for in, want := range map[string]source.Delimiter{"": 0, `\t`: '\t', "tab": '\t', "\t": '\t', ";": ';', "|": '|'} {
		d, err := source.ParseDelimiter(in)
		if err != nil || d != want {
			t.Errorf("%q: %q %v", in, d, err)
		}
	}
	for _, bad := range []string{"ab", `"`, "\n", "§"} {
		if _, err := source.ParseDelimiter(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	b, _ := json.Marshal(source.Options{Delimiter: '\t', Format: "tsv"})
	if string(b) != `{"format":"tsv","delimiter":"\\t"}` {
		t.Errorf("json %s", b)
	}
	var o source.Options
	if err := json.Unmarshal([]byte(`{"delimiter":";"}`), &o); err != nil || o.Delimiter != ';' {
		t.Errorf("unmarshal: %q %v", o.Delimiter, err)
	}
}
