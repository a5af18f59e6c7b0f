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
	// source's columns. Key columns need not be stored.
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
	// Match is how keys match a lookup key: exact (the default when
	// empty) or suffix (domain names, see format.MatchSuffix; one key
	// column, always case-folded).
	Match string `json:"match,omitempty"`

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
	if len(o.Key) == 0 {
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
	if k, err := format.ParseMatchKind(o.Match); err != nil {
		s.Errorf("match", "%v", err)
	} else if k != format.MatchExact && len(o.Key) > 1 {
		s.Errorf("match", "a %s table has one key column, not %d", k, len(o.Key))
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
