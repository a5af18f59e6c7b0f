package main

import (
	"strings"

	"github.com/lutkit/lutkit/format"
	"github.com/lutkit/lutkit/reader"
)

// matchFlags returns the lut compile flags that rebuild a suffix,
// wildcard, pattern, range or time-bounded table's matching, or "" for an exact table.
func matchFlags(t *reader.Table) string {
	m := t.Meta()
	var f []string
	switch {
	case t.MatchKind() == format.MatchSuffix, t.MatchKind() == format.MatchWildcard, t.MatchKind() == format.MatchPattern:
		f = append(f, "--match "+t.MatchKind().String())
		if !t.TimeBounded() {
			return f[0]
		}
	case t.MatchKind() == format.MatchRange:
		f = append(f, "--match range --range-columns "+strings.Join(m.RangeColumns, ","))
	case !t.TimeBounded():
		return ""
	}
	if t.TimeBounded() { // a table of any key kind, or a range table, bounded in time
		if m.ValidFrom != "" {
			f = append(f, "--valid-from "+m.ValidFrom)
		}
		if m.ValidTo != "" {
			f = append(f, "--valid-to "+m.ValidTo)
		}
	}
	if o := t.Overlap(); o != "error" {
		f = append(f, "--overlap "+o)
	}
	return strings.Join(f, " ")
}
