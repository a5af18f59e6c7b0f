package source

import (
	"fmt"
	"unicode/utf8"
)

// Delimiter is a CSV field delimiter: a single-byte character other than a
// quote, CR or LF. Zero means the format's default (',' for CSV, tab for
// TSV). In text (tables.yaml, flags, JSON) it is the character itself, or
// `\t` or "tab" for a tab.
type Delimiter rune

// ParseDelimiter reads a delimiter as users write it: a single character,
// or `\t` / "tab" for a tab. The empty string means the format's default
// (zero).
func ParseDelimiter(s string) (Delimiter, error) {
	var d Delimiter
	if err := d.UnmarshalText([]byte(s)); err != nil {
		return 0, err
	}
	return d, nil
}

// UnmarshalText implements encoding.TextUnmarshaler (see ParseDelimiter).
func (d *Delimiter) UnmarshalText(b []byte) error {
	s := string(b)
	switch s {
	case "":
		*d = 0
		return nil
	case `\t`, "tab", "\t":
		*d = '\t'
		return nil
	}
	r := []rune(s)
	if len(r) != 1 || r[0] == '"' || r[0] == '\n' || r[0] == '\r' {
		return fmt.Errorf("delimiter %q must be a single character other than a quote or newline", s)
	}
	nd := Delimiter(r[0])
	if err := nd.Validate(); err != nil {
		return err
	}
	*d = nd
	return nil
}

// MarshalText implements encoding.TextMarshaler: the character, `\t` for
// a tab, "" for the default.
func (d Delimiter) MarshalText() ([]byte, error) {
	switch d {
	case 0:
		return nil, nil
	case '\t':
		return []byte(`\t`), nil
	}
	return []byte(string(rune(d))), nil
}

// Validate reports a delimiter the CSV reader cannot use.
func (d Delimiter) Validate() error {
	if d >= utf8.RuneSelf {
		return fmt.Errorf("delimiter %q is not a single-byte character", rune(d))
	}
	if d == '"' || d == '\r' || d == '\n' {
		return fmt.Errorf("invalid delimiter %q", rune(d))
	}
	return nil
}
