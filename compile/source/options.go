package source

import (
	"strings"

	"github.com/lutkit/lutkit/internal/config"
)

// Options select and configure a source. They are the serialisable spec
// of a source: "lut compile" flags and a tables.yaml source entry decode
// into them (the json names are the tables.yaml keys), and Validate
// checks them the same way for both.
type Options struct {
	// Format is "csv", "tsv", "json", "ndjson", "yaml", "sqlite",
	// "parquet" or "arrow". Empty means detect from the file name: .csv,
	// .tsv, .tab, .txt, .json, .ndjson/.jsonl, .yaml/.yml (each optionally
	// with .gz), .db/.sqlite/.sqlite3, .parquet, .arrow/.feather/.ipc.
	// Standard input ("-") defaults to CSV.
	Format string `json:"format,omitempty"`
	// Delimiter is the CSV field delimiter. Zero means ',' for CSV and
	// '\t' for TSV.
	Delimiter Delimiter `json:"delimiter,omitempty"`
	// Quote is how a CSV or TSV source quotes its fields: QuoteCSV (the
	// default when empty) reads RFC 4180's quoted fields, which start
	// with a quote and may hold the delimiter and line breaks; QuoteNone
	// reads every quote as text, and a record is one line.
	Quote string `json:"quote,omitempty"`
	// Header is the list of column names to use when the file has no
	// header row. Empty means the first row is the header. For JSON,
	// NDJSON and YAML it lists the columns, saving the pass that finds
	// them; a field not in it makes its row bad.
	Header []string `json:"header,omitempty"`
	// SQLiteTable names the table to read from a SQLite file.
	SQLiteTable string `json:"sqlite_table,omitempty"`
	// SQLiteQuery is a SELECT to run on a SQLite file instead of a table.
	SQLiteQuery string `json:"sqlite_query,omitempty"`
	// Nested says what the JSON, NDJSON and YAML readers do with a nested
	// value (an object or array inside a row): NestedFlatten (the default
	// when empty) makes each field of a nested object a column of its own,
	// named by its path ("a.b"), and keeps an array as JSON text;
	// NestedJSON keeps every nested value as its JSON text in one column.
	Nested string `json:"nested,omitempty"`

	// Postgres is a PostgreSQL connection URL or keyword/value string to
	// read Query from instead of a file; MySQL is a MySQL/MariaDB DSN
	// (user@tcp(host:port)/db). The password comes from the environment
	// (PGPASSWORD, ~/.pgpass; MYSQL_PWD) or PasswordFile, never from the
	// options, which are logged and stored.
	Postgres string `json:"postgres,omitempty"`
	MySQL    string `json:"mysql,omitempty"`
	// Query is the SELECT to run on Postgres or MySQL.
	Query string `json:"query,omitempty"`
	// PasswordFile names a file holding the database password (its first
	// line).
	PasswordFile string `json:"password_file,omitempty"`
}

// Quoting of CSV and TSV fields (Options.Quote).
const (
	QuoteCSV  = "csv"
	QuoteNone = "none"
)

// Nested values policies (Options.Nested).
const (
	NestedFlatten = "flatten"
	NestedJSON    = "json"
)

// Database returns the database source the options select: "postgres",
// "mysql", or "" for a file.
func (o *Options) Database() string {
	switch {
	case o.Postgres != "":
		return "postgres"
	case o.MySQL != "":
		return "mysql"
	}
	return ""
}

// Validate checks the options as Open would use them, reporting every
// problem at once, each naming its option by its tables.yaml key.
func (o *Options) Validate() error { return config.Validate(o.Check) }

// Check reports the problems of the options in s, each with the key at
// fault, so that the caller places it (a tables.yaml position, a flag).
func (o *Options) Check(s config.Scope) {
	switch f := strings.ToLower(o.Format); {
	case f == "", f == "csv", f == "tsv", linkable[f]:
	default:
		s.Errorf("format", "unknown format %q (want %s)", o.Format, formatList)
	}
	switch o.Nested {
	case "", NestedFlatten, NestedJSON:
	default:
		s.Errorf("nested", "unknown nested policy %q (want flatten or json)", o.Nested)
	}
	switch o.Quote {
	case "", QuoteCSV, QuoteNone:
		if f := strings.ToLower(o.Format); o.Quote != "" && linkable[f] {
			s.Errorf("quote", "a %s source has no quoting to choose (quote is for CSV and TSV)", f)
		}
	default:
		s.Errorf("quote", "unknown quoting %q (want csv or none)", o.Quote)
	}
	o.checkDatabase(s)
	if o.Delimiter != 0 {
		s.Check("delimiter", o.Delimiter.Validate())
	}
	if len(o.Header) > 0 {
		s.Check("header", CheckColumnNames(o.Header))
	}
	if o.SQLiteTable != "" && o.SQLiteQuery != "" {
		s.Errorf("", "give sqlite_table or sqlite_query, not both")
	}
}

// CheckFormat reports, in s, the options that do not apply to the format
// of the file source at path (Format, else the one its name gives):
// sqlite_table and sqlite_query are for SQLite files only. A database
// source, or a name of no known format, is left to Check and Open.
func (o *Options) CheckFormat(path string, s config.Scope) {
	if o.Database() != "" {
		return
	}
	f := strings.ToLower(o.Format)
	if f == "" && path == "-" {
		f = "csv"
	}
	if f == "" {
		f, _ = formatFromName(path)
	}
	if formatNames[f] == "" || f == "sqlite" {
		return // an unknown format is Check's
	}
	if o.SQLiteTable != "" {
		s.Errorf("sqlite_table", "applies to SQLite sources only; %s is read as %s", path, formatNames[f])
	}
	if o.SQLiteQuery != "" {
		s.Errorf("sqlite_query", "applies to SQLite sources only; %s is read as %s", path, formatNames[f])
	}
}

// formatNames names the formats in messages.
var formatNames = map[string]string{"csv": "CSV", "tsv": "TSV", "json": "JSON", "ndjson": "NDJSON", "yaml": "YAML",
	"sqlite": "SQLite", "parquet": "Parquet", "arrow": "Arrow IPC"}

// checkDatabase checks the options of a database source.
func (o *Options) checkDatabase(s config.Scope) {
	if o.Postgres != "" && o.MySQL != "" {
		s.Errorf("", "give postgres or mysql, not both")
	}
	if o.Database() == "" {
		if o.Query != "" {
			s.Errorf("query", "a query needs a database (postgres or mysql)")
		}
		if o.PasswordFile != "" {
			s.Errorf("password_file", "a password file needs a database (postgres or mysql)")
		}
		return
	}
	if o.Query == "" {
		s.Errorf("query", "missing: a %s source needs the SELECT to run", o.Database())
	}
	if o.Format != "" || o.SQLiteTable != "" || o.SQLiteQuery != "" || len(o.Header) > 0 || o.Delimiter != 0 || o.Quote != "" {
		s.Errorf("", "a %s source takes no file options (format, delimiter, quote, header, sqlite_table, sqlite_query)", o.Database())
	}
}
