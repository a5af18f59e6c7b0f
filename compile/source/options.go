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
	// Format is "csv", "tsv", "sqlite", "parquet" or "arrow". Empty means
	// detect from the file name: .csv, .tsv, .tab, .txt (each optionally
	// with .gz), .db/.sqlite/.sqlite3, .parquet, .arrow/.feather/.ipc.
	// Standard input ("-") defaults to CSV.
	Format string `json:"format,omitempty"`
	// Delimiter is the CSV field delimiter. Zero means ',' for CSV and
	// '\t' for TSV.
	Delimiter Delimiter `json:"delimiter,omitempty"`
	// Header is the list of column names to use when the file has no
	// header row. Empty means the first row is the header.
	Header []string `json:"header,omitempty"`
	// SQLiteTable names the table to read from a SQLite file.
	SQLiteTable string `json:"sqlite_table,omitempty"`
	// SQLiteQuery is a SELECT to run on a SQLite file instead of a table.
	SQLiteQuery string `json:"sqlite_query,omitempty"`
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
		s.Errorf("format", "unknown format %q (want csv, tsv, sqlite, parquet or arrow)", o.Format)
	}
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
