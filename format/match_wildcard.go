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
// characters, possibly empty, '?' exactly one character; every other
// character matches itself (case-folded with FeatureFoldCase). A
// character is a valid UTF-8 encoding, or a byte that does not start one.
// A lookup key gets the most specific matching row: the one with the most
// literal characters (those that are not '*' or '?'), then the first in
// source order. The WILDCARD section (a literal index, match_literal.go)
// ranks the rows in that order and anchors each on its longest literal
// piece, so that a lookup checks only the globs whose anchor the key
// contains, and the globs of '*' and '?' alone.
//
// The first wildcard tables knew '*' only: their section's flags word is
// zero, and '?' in their keys is a literal character, compared byte for
// byte as every other is (GlobFlags).

// SectionWildcard is the literal index of a wildcard table.
const SectionWildcard = 7

// FeatureWildcard: keys are globs (version 1.2, a WILDCARD section).
const FeatureWildcard uint32 = 1 << 3

// GlobFlags is the flags word of a WILDCARD section: the glob syntax of
// the table's keys.
type GlobFlags uint64

const (
	// GlobQuestion: '?' matches exactly one character, and '*' and
	// literals are compared character by character. Without it (the
	// first wildcard tables) '*' matches any run of bytes and '?' is
	// itself.
	GlobQuestion GlobFlags = 1
	// GlobSyntax is the syntax the compiler writes.
	GlobSyntax = GlobQuestion
)

// ErrWildcardEmpty: a wildcard table's key may not be empty.
var ErrWildcardEmpty = errors.New("empty wildcard key")

// CheckWildcard checks a glob key.
func CheckWildcard(glob []byte) error {
	if len(glob) == 0 {
		return ErrWildcardEmpty
	}
	return nil
}

// isGlobMeta reports whether c is special in the syntax f.
func isGlobMeta(c byte, f GlobFlags) bool {
	return c == '*' || c == '?' && f&GlobQuestion != 0
}

// WildcardLiterals returns the number of literal characters of a glob in
// the syntax f: its characters other than '*' (and '?').
func WildcardLiterals(glob []byte, f GlobFlags) int {
	n := utf8.RuneCount(glob) - bytes.Count(glob, []byte{'*'})
	if f&GlobQuestion != 0 {
		n -= bytes.Count(glob, []byte{'?'})
	}
	return n
}

// WildcardAnchor returns the longest literal piece of a glob in the
// syntax f (the first of the longest), the glob split at '*' (and '?'),
// or nil for a glob of those alone.
func WildcardAnchor(glob []byte, f GlobFlags) []byte {
	var best []byte
	for _, p := range bytes.FieldsFunc(glob, func(r rune) bool { return r < utf8.RuneSelf && isGlobMeta(byte(r), f) }) {
		if len(p) > len(best) {
			best = p
		}
	}
	return best
}

// MatchGlob reports whether key matches glob in the syntax f. It does not
// allocate.
func MatchGlob(glob, key []byte, f GlobFlags) bool {
	if f&GlobQuestion != 0 {
		return matchGlobChars(glob, key)
	}
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

// matchGlobChars is MatchGlob with '?', character by character: every
// step of the glob ('*' aside) takes exactly one character of the key,
// so that, as with bytes, the last '*' is the one backtracking point.
func matchGlobChars(glob, key []byte) bool {
	g, k, star, mark := 0, 0, -1, 0
	for k < len(key) {
		if g < len(glob) {
			switch c := glob[g]; {
			case c == '*':
				star, mark = g, k
				g++
				continue
			case c == '?':
				g, k = g+1, k+charLen(key[k:])
				continue
			case c < utf8.RuneSelf:
				// An ASCII character: the key's byte, if equal, is one too.
				if c == key[k] {
					g, k = g+1, k+1
					continue
				}
			default:
				if gn := charLen(glob[g:]); k+gn <= len(key) && bytes.Equal(glob[g:g+gn], key[k:k+gn]) && charLen(key[k:]) == gn {
					g, k = g+gn, k+gn
					continue
				}
			}
		}
		if star < 0 {
			return false
		}
		if key[mark] < utf8.RuneSelf {
			mark++
		} else {
			mark += charLen(key[mark:])
		}
		g, k = star+1, mark
	}
	for g < len(glob) && glob[g] == '*' {
		g++
	}
	return g == len(glob)
}

// charLen returns the length of the character b starts with (b is not
// empty): its UTF-8 encoding, or 1 for a byte that does not start one.
func charLen(b []byte) int {
	if b[0] < utf8.RuneSelf {
		return 1
	}
	_, n := utf8.DecodeRune(b)
	return n
}

// WildcardRows returns the rows of a wildcard table of the syntax f,
// given their keys and records in source order, in rank order: the most
// literal characters first, then source order ('?' and '*' count alike:
// a?c and a*c tie, and the first in the source wins).
func WildcardRows(keys [][]byte, offs []uint64, f GlobFlags) []LiteralRow {
	type ranked struct {
		lits, i int
	}
	rs := make([]ranked, len(keys))
	for i, k := range keys {
		rs[i] = ranked{WildcardLiterals(k, f), i}
	}
	slices.SortStableFunc(rs, func(a, b ranked) int { return b.lits - a.lits })
	out := make([]LiteralRow, len(keys))
	for j, r := range rs {
		out[j] = LiteralRow{Off: offs[r.i]}
		if a := WildcardAnchor(keys[r.i], f); len(a) > 0 {
			out[j].Anchors = [][]byte{a}
		}
	}
	return out
}
