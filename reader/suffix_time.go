package reader

import (
	"bytes"

	"github.com/lutkit/lutkit/format"
)

// Suffix, wildcard and pattern tables bounded in time
//
// A suffix, wildcard or pattern table compiled with valid_from/valid_to
// has its kind's section and a TIMEBOUND section (t.iv) of one group per
// distinct key: in a suffix table the key's MPHF position, as in an exact
// table bounded in time; in a wildcard or pattern table the key's rank in
// the literal index, so that a glob or pattern that matches gives its
// group without hashing its key again. A lookup at a time walks the keys
// that match in the kind's order (the longest suffix first; the most
// literal glob; patterns in source order) and answers each key's rows
// valid at that time, in the table's overlap order, skipping the keys of
// which no row is valid then.

// matchKindAt is MatchAt in a suffix, wildcard or pattern table bounded
// in time.
func (t *Table) matchKindAt(key []byte, at int64, out []View) int {
	switch t.match {
	case format.MatchSuffix:
		return t.matchSuffix(key, at, out)
	case format.MatchWildcard, format.MatchPattern:
		if t.lit != nil {
			return t.matchLiteral(key, at, out)
		}
	}
	return 0
}

// suffixAt writes the rows of the normalised suffix key valid at the time
// at to out, and returns how many it wrote.
func (t *Table) suffixAt(key []byte, at int64, out []View) int {
	g, _, ok := t.finder.FindPos(key)
	if !ok {
		return 0
	}
	return t.matchGroup(t.iv, g, at, out)
}

// checkRankGroup is Verify's check that row r, listed by TIMEBOUND group
// g of a wildcard or pattern table, has the key of the row of rank g.
func (t *Table) checkRankGroup(r format.Record, g uint64, off int64) error {
	if g >= t.lit.x.R {
		return format.Corruptf(off, "TIMEBOUND group %d beyond the %d ranks", g, t.lit.x.R)
	}
	rec, ok := t.lit.x.Record(uint32(g))
	if !ok {
		return format.Corruptf(off, "TIMEBOUND group %d beyond the %d ranks", g, t.lit.x.R)
	}
	first, ok := format.ParseRecord(t.data, rec, t.ncols)
	if !ok || !bytes.Equal(first.Key(), r.Key()) {
		return format.Corruptf(off, "a row of key %q is in group %d, the key of rank %d is %q", r.Key(), g, g, first.Key())
	}
	return nil
}
