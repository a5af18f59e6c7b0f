package reader

import (
	"time"

	"github.com/lutkit/lutkit/format"
)

// Match kinds
//
// A table of a match kind other than exact (format.MatchKind) answers
// Get, Lookup and LookupBatch with its best match, and Match with all of
// them. Such a table always has FeatureFoldCase, so that the exact
// tables' fast path does not test the kind.

// openMatch reads the match kind of the header and its sections.
func (t *Table) openMatch() error {
	t.match = format.MatchOf(t.header.Incompat)
	suffix := t.sections[format.SectionSuffix]
	if (t.match == format.MatchSuffix) != (suffix.Kind != 0) {
		return format.Corruptf(int64(t.header.SectionsOff), "the SUFFIX section does not agree with the header's feature bits")
	}
	if t.match == format.MatchSuffix && !t.fold {
		return format.Corruptf(12, "a %s table without FOLD_CASE", t.match)
	}
	if t.match == format.MatchSuffix {
		labels, flags, err := format.DecodeSuffixSection(t.file[suffix.Off:suffix.Off+suffix.Len], int64(suffix.Off), t.header.Rows)
		if err != nil {
			return err
		}
		if (flags&format.SuffixTimeBound != 0) != (t.header.Incompat&format.FeatureTimeBound != 0) {
			return format.Corruptf(int64(suffix.Off), "the SUFFIX section's time flag does not agree with the header's feature bits")
		}
		if t.header.Incompat&format.FeatureRange != 0 {
			return format.Corruptf(int64(suffix.Off), "a table of two match kinds")
		}
		t.labels = labels
	}
	return t.openLiteral()
}

// MatchKind returns how the table's keys match a lookup key.
func (t *Table) MatchKind() format.MatchKind { return t.match }

// findMatch returns the best match of key in a table of a match kind
// other than exact.
func (t *Table) findMatch(key []byte) (format.Record, bool) {
	switch t.match {
	case format.MatchSuffix:
		return t.findSuffix(key)
	case format.MatchWildcard, format.MatchPattern:
		return t.findLiteral(key)
	}
	return format.Record{}, false
}

// Match sets out to the rows that match key, the most specific first,
// up to len(out), and returns how many it set. In an exact table that is
// the row of key, if there is one; a range or time-bounded table answers
// as MatchAt at the current time. The Views alias the mapping (see
// Lookup). With a reused out it does not allocate.
func (t *Table) Match(key []byte, out []View) int {
	if len(out) == 0 {
		return 0
	}
	if t.iv != nil {
		return t.MatchAt(key, time.Now().Unix(), out)
	}
	switch t.match {
	case format.MatchSuffix:
		return t.matchSuffix(key, 0, out)
	case format.MatchWildcard, format.MatchPattern:
		return t.matchLiteral(key, 0, out)
	}
	v, ok := t.Lookup(key)
	if !ok {
		return 0
	}
	out[0] = v
	return 1
}

// LookupStored returns the row whose stored key is key, as View.Key
// returns it (normalised, case-folded), whatever the table's match kind:
// the row itself, not the best match of key. Tools that compare or walk
// tables (lut diff) use it.
func (t *Table) LookupStored(key []byte) (View, bool) {
	r, ok := t.find(key)
	return View{r}, ok
}

// matchCheck is Verify's check of the keys of a table of a match kind:
// each in the normal form of its kind, and the match sections those of
// the keys.
type matchCheck struct {
	t      *Table
	labels uint64
}

// key checks one live key.
func (c *matchCheck) key(k []byte) error {
	switch c.t.match {
	case format.MatchSuffix:
		return c.suffixKey(k)
	}
	return nil
}

// done checks the match sections against every key seen.
func (c *matchCheck) done() error {
	switch c.t.match {
	case format.MatchSuffix:
		return c.suffixDone()
	case format.MatchWildcard, format.MatchPattern:
		return c.t.verifyLiteral()
	}
	return nil
}
