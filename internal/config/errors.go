package config

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Error is one problem in a configuration. It names the file, the line
// and column (when known), an optional scope (such as `table "geo"`), the
// field at fault (a dotted path such as inputs[0].listen, or the flag that
// set it, such as --format) and what is wrong.
type Error struct {
	File   string
	Line   int
	Column int
	Scope  string
	Field  string
	Msg    string
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		if e.Line > 0 {
			fmt.Fprintf(&b, ":%d", e.Line)
			if e.Column > 0 {
				fmt.Fprintf(&b, ":%d", e.Column)
			}
		}
		b.WriteString(": ")
	}
	if e.Scope != "" {
		b.WriteString(e.Scope)
		b.WriteString(": ")
	}
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Errors lists every problem found in a configuration, one per line.
type Errors []*Error

func (es Errors) Error() string {
	s := make([]string, len(es))
	for i, e := range es {
		s[i] = e.Error()
	}
	return strings.Join(s, "\n")
}

// Err returns es, or nil when it is empty.
func (es Errors) Err() error {
	if len(es) == 0 {
		return nil
	}
	return es
}

// Sort orders the errors by file, line and column, keeping the order in
// which they were found among errors at one place (and among errors
// without a position, which come first).
func (es Errors) Sort() {
	slices.SortStableFunc(es, func(a, b *Error) int {
		return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column))
	})
}

// Field joins a field path and a key: Field("inputs[0]", "listen") is
// "inputs[0].listen"; Field("", "tables") is "tables".
func Field(prefix, key string) string {
	switch {
	case prefix == "":
		return key
	case key == "":
		return prefix
	case key[0] == '[':
		return prefix + key
	}
	return prefix + "." + key
}

// Index is the path of element i of the list at prefix: "inputs[0]".
func Index(prefix string, i int) string {
	return fmt.Sprintf("%s[%d]", prefix, i)
}
