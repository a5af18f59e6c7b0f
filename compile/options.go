package compile

import (
	"time"

	"github.com/lutkit/lutkit/format"
	"github.com/lutkit/lutkit/internal/config"
)

// Duplicate policies.
const (
	DuplicateError = "error" // a repeated key fails the compile, naming both lines
	DuplicateFirst = "first" // the first row with a key wins
	DuplicateLast  = "last"  // the last row with a key wins
)

// Options control a compile. The fields with a json name are the
// serialisable spec of a .lut table: "lut compile" flags and a tables.yaml
// table decode into them (the json names are the tables.yaml keys), and
// Validate checks them the same way for both. The others say how one
// compile runs. The zero value is not valid: Key is required.
type Options struct {
	// Key names the key column, or several for a composite key (their
	// values joined by format.KeySeparator). Required.
	Key []string `json:"key"`
	// Columns lists the columns to store, in order. Empty means all the
	// source's columns. The key columns, RangeColumns, ValidFrom and
	// ValidTo must be among them.
	Columns []string `json:"columns,omitempty"`
	// FoldCase case-folds keys at compile time; lookups fold the same way.
	FoldCase bool `json:"fold_case,omitempty"`
	// OnDuplicate is DuplicateError (the default when empty),
	// DuplicateFirst or DuplicateLast.
	OnDuplicate string `json:"on_duplicate,omitempty"`
	// SkipBadRows counts and skips rows with the wrong number of fields or
	// invalid UTF-8 instead of failing. Skipped rows are reported in Stats
	// and in the META section, never silently.
	SkipBadRows bool `json:"skip_bad_rows,omitempty"`
	// ColumnTypes gives stored columns a type other than text: number,
	// bool or json (format.ParseColumnType). Their values are checked as
	// they are read (a bad one is a row error) and written unquoted as
	// JSON; an empty value is written as null.
	ColumnTypes map[string]string `json:"column_types,omitempty"`
	// SourceTypes types the stored columns as the source declares them
	// (source.Typed: PostgreSQL and MySQL result columns, Parquet and
	// Arrow fields, the values of JSON and NDJSON documents): integers,
	// decimals and floats number, booleans bool, JSON columns json; ColumnTypes overrides it per column. Other
	// sources, and the columns they leave untyped, stay text.
	SourceTypes bool `json:"source_types,omitempty"`
	// Match is how lookups match rows: "exact" (the default when empty),
	// "suffix" (domain names, see format.MatchSuffix; one key column,
	// always case-folded), "range" (MatchRange: an integer within
	// RangeColumns), "wildcard" (globs, format.MatchWildcard) or
	// "pattern" (regular expressions, format.MatchPattern).
	Match string `json:"match,omitempty"`
	// RangeColumns names the inclusive integer bounds from,to of a range
	// table's rows; they are its key columns.
	RangeColumns []string `json:"range_columns,omitempty"`
	// ValidFrom and ValidTo name the columns of a row's validity
	// [valid_from, valid_to): RFC 3339 or epoch seconds, an empty value
	// an open end. With either, a key has one row per validity and a
	// lookup takes a time.
	ValidFrom string `json:"valid_from,omitempty"`
	ValidTo   string `json:"valid_to,omitempty"`
	// Overlap is what overlapping ranges, or validities of one key, do:
	// "error" (the default when empty), "narrowest" or "first" (the
	// order in which a lookup of several matches returns them).
	Overlap string `json:"overlap,omitempty"`
	// StrictPatterns makes a pattern without a literal every match
	// contains (one run on every lookup) an error at its row, instead of
	// a warning in Stats.Warnings.
	StrictPatterns bool `json:"strict_patterns,omitempty"`

	// BuildTime is recorded in the header. Zero means none is recorded,
	// which keeps output reproducible; see BuildTimeFromEnv.
	BuildTime time.Time `json:"-"`
	// Seed is the first hash seed tried. Zero means DefaultSeed.
	Seed uint64 `json:"-"`
	// Progress, if set, is called about every 65536 rows with the rows
	// read so far, and once at the end.
	Progress func(rows int64) `json:"-"`
	// SourceName names the source in row errors (the file name).
	SourceName string `json:"-"`
	// MaxBadRowErrors is how many skipped-row errors Stats keeps (the
	// count covers all of them). Zero means 20.
	MaxBadRowErrors int `json:"-"`
}

// Validate checks the options, reporting every problem at once, each
// naming its option by its tables.yaml key. File and Write run it.
func (o *Options) Validate() error { return config.Validate(o.Check) }

// Check reports the problems of the options in s, each with the key at
// fault, so that the caller places it (a tables.yaml position, a flag).
func (o *Options) Check(s config.Scope) {
	if len(o.keyColumns()) == 0 {
		s.Errorf("key", "missing: a .lut table needs its key column(s)")
	}
	for _, k := range o.Key {
		if k == "" {
			s.Errorf("key", "a key column name is empty")
		}
	}
	seen := map[string]bool{}
	for _, c := range o.Columns {
		if seen[c] {
			s.Errorf("columns", "column %q is listed twice", c)
		}
		seen[c] = true
	}
	for name, t := range o.ColumnTypes {
		if _, err := format.ParseColumnType(t); err != nil {
			s.Errorf("column_types", "column %q: %v", name, err)
		}
	}
	o.checkMatch(s)
	if o.StrictPatterns && o.Match != MatchPattern {
		s.Errorf("strict_patterns", "strict_patterns applies to pattern tables only")
	}
	switch o.OnDuplicate {
	case "", DuplicateError, DuplicateFirst, DuplicateLast:
	default:
		s.Errorf("on_duplicate", "unknown duplicate policy %q (want error, first or last)", o.OnDuplicate)
	}
}

// withDefaults returns the options with every default applied: the one
// place defaults are set.
func (o Options) withDefaults() Options {
	if o.OnDuplicate == "" {
		o.OnDuplicate = DuplicateError
	}
	o.Key = o.keyColumns()
	if o.Seed == 0 {
		o.Seed = DefaultSeed
	}
	if o.Match == format.MatchExact.String() {
		o.Match = "" // the default, as the META section records it
	}
	if o.Match == format.MatchSuffix.String() {
		o.FoldCase = true // domain names are case-insensitive
	}
	if o.MaxBadRowErrors == 0 {
		o.MaxBadRowErrors = 20
	}
	return o
}
