package enrichd

import (
	"fmt"
	"strings"

	"github.com/lutkit/lutkit/enrichd/engine"
	"github.com/lutkit/lutkit/format"
	"github.com/lutkit/lutkit/reader"
)

// keyFields returns how many fields make a lookup key of t: one in a
// range table (an integer, or an IPv4 address, within its from,to
// columns), one per key column otherwise (a suffix, wildcard or pattern
// table has one; a time-bounded table's time is the event's, not a
// field).
func keyFields(t *reader.Table) int {
	if t.MatchKind() == format.MatchRange {
		return 1
	}
	return len(t.KeyColumns())
}

// checkKeyFields returns an error when the fields of r do not make a key
// of t: every lookup of the rule would miss.
func checkKeyFields(r *engine.Rule, t *reader.Table) error {
	want := keyFields(t)
	if len(r.Fields) == want && (!r.Each || want == 1) {
		return nil
	}
	var cols []string
	for _, i := range t.KeyColumns() {
		cols = append(cols, t.Columns()[i])
	}
	switch {
	case t.MatchKind() == format.MatchRange:
		return fmt.Errorf("table %q is a range table (%s): a lookup takes one field, its integer or IPv4 address, not %d", r.Table, strings.Join(cols, ", "), len(r.Fields))
	case r.Each:
		return fmt.Errorf("table %q has %d key columns (%s), and each looks every element of one field up as a whole key: use a table of one key column", r.Table, want, strings.Join(cols, ", "))
	}
	return fmt.Errorf("table %q has %s (%s), so the rule needs %s, not %d", r.Table, plural(want, "key column"), strings.Join(cols, ", "), plural(want, "field"), len(r.Fields))
}

// plural is n and the noun, with an s unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
