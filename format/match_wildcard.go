package format

import (
	"bytes"
	"errors"
	"slices"
	"unicode/utf8"
)

// Wildcard tables
//
// The key of a row of a wildcard table is a glob: '*' matches any run of
// bytes, possibly empty; every other byte matches itself (case-folded
// with FeatureFoldCase). A lookup key gets the most specific matching
// row: the one with the most literal characters (the runes that are not
// '*'), then the first in source order. The WILDCARD section (a literal
// index, match_literal.go) ranks the rows in that order and anchors each
// on its longest literal piece, so that a lookup checks only the globs
// whose anchor the key contains, and the globs of '*' alone.

// SectionWildcard is the literal index of a wildcard table.
const SectionWildcard = 7

// FeatureWildcard: keys are globs (version 1.2, a WILDCARD section).
const FeatureWildcard uint32 = 1 << 3

// ErrWildcardEmpty: a wildcard table's key may not be empty.
var ErrWildcardEmpty = errors.New("empty wildcard key")

// CheckWildcard checks a glob key.
func CheckWildcard(glob []byte) error {
	if len(glob) == 0 {
		return ErrWildcardEmpty
	}
	return nil
}

// WildcardLiterals returns the number of literal characters of a glob:
// its runes other than '*'.
func WildcardLiterals(glob []byte) int {
	return utf8.RuneCount(glob) - bytes.Count(glob, []byte{'*'})
}

// WildcardAnchor returns the longest literal piece of a glob (the first
// of the longest), or nil for a glob of '*' alone.
func WildcardAnchor(glob []byte) []byte {
	var best []byte
	for p := range bytes.SplitSeq(glob, []byte{'*'}) {
		if len(p) > len(best) {
			best = p
		}
	}
	return best
}

// MatchGlob reports whether key matches glob. It does not allocate.
func MatchGlob(glob, key []byte) bool {
	// One backtracking point, the last '*' seen: a later '*' makes every
	// earlier choice final.
	g, k, star, mark := 0, 0, -1, 0
	for k < len(key) {
		switch {
		case g < len(glob) && glob[g] == '*':
			star, mark = g, k
			g++
		case g < len(glob) && glob[g] == key[k]:
			g++
			k++
		case star >= 0:
			mark++
			g, k = star+1, mark
		default:
			return false
		}
	}
	for g < len(glob) && glob[g] == '*' {
		g++
	}
	return g == len(glob)
}

// WildcardRows returns the rows of a wildcard table, given their keys and
// records in source order, in rank order: the most literal characters
// first, then source order.
func WildcardRows(keys [][]byte, offs []uint64) []LiteralRow {
	type ranked struct {
		lits, i int
	}
	rs := make([]ranked, len(keys))
	for i, k := range keys {
		rs[i] = ranked{WildcardLiterals(k), i}
	}
	slices.SortStableFunc(rs, func(a, b ranked) int { return b.lits - a.lits })
	out := make([]LiteralRow, len(keys))
	for j, r := range rs {
		out[j] = LiteralRow{Off: offs[r.i]}
		if a := WildcardAnchor(keys[r.i]); len(a) > 0 {
			out[j].Anchors = [][]byte{a}
		}
	}
	return out
}
