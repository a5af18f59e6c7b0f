package source_test

import (
	"encoding/json"
	"testing"

	"github.com/lutkit/lutkit/compile/source"
)

func TestOptionsValidate(t *testing.T) {
	o := source.Options{Format: "xml", Delimiter: '"', Header: []string{"a", "a"}, SQLiteTable: "t", SQLiteQuery: "select 1"}
	err := o.Validate()
	want := `format: unknown format "xml" (want csv, tsv, json, ndjson, yaml, sqlite, parquet or arrow)
delimiter: invalid delimiter '"'
header: duplicate column name "a" (columns 1 and 2)
give sqlite_table or sqlite_query, not both`
	if err == nil || err.Error() != want {
		t.Errorf("got\n%v\nwant\n%s", err, want)
	}
	for _, f := range []string{"", "CSV", "tsv", "sqlite", "parquet", "arrow", "json", "ndjson", "yaml"} {
		if err := (&source.Options{Format: f}).Validate(); err != nil {
			t.Errorf("format %q: %v", f, err)
		}
	}
	for _, c := range []struct {
		o    source.Options
		want string
	}{
		{source.Options{Nested: "deep"}, `nested: unknown nested policy "deep" (want flatten or json)`},
		{source.Options{Query: "select 1", PasswordFile: "pw"}, "query: a query needs a database (postgres or mysql)\npassword_file: a password file needs a database (postgres or mysql)"},
		{source.Options{Postgres: "postgres://h/db"}, "query: missing: a postgres source needs the SELECT to run"},
		{source.Options{MySQL: "u@tcp(h)/db", Query: "select 1", Format: "csv"}, "a mysql source takes no file options (format, delimiter, quote, header, sqlite_table, sqlite_query)"},
		{source.Options{MySQL: "u@tcp(h)/db", Query: "select 1", Quote: "none"}, "a mysql source takes no file options (format, delimiter, quote, header, sqlite_table, sqlite_query)"},
		{source.Options{Quote: "single"}, `quote: unknown quoting "single" (want csv or none)`},
		{source.Options{Format: "parquet", Quote: "none"}, "quote: a parquet source has no quoting to choose (quote is for CSV and TSV)"},
		{source.Options{MySQL: "u@tcp(h)/db", Postgres: "postgres://h/db", Query: "select 1"}, "give postgres or mysql, not both"},
	} {
		if err := c.o.Validate(); err == nil || err.Error() != c.want {
			t.Errorf("%+v: got\n%v\nwant\n%s", c.o, err, c.want)
		}
	}
	for _, o := range []source.Options{{Nested: "json"}, {Nested: "flatten"}, {Quote: "csv"}, {Quote: "none", Format: "tsv"}, {Postgres: "postgres://h/db", Query: "select 1", PasswordFile: "pw"}, {MySQL: "u@tcp(h)/db", Query: "select 1"}} {
		if err := o.Validate(); err != nil {
			t.Errorf("%+v: %v", o, err)
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
