package format

import "fmt"

// MatchKind is how a table's keys match a lookup key. An exact table (the
// zero kind, every file before version 1.2) finds the row whose key is the
// lookup key; the other kinds are told by an incompatible feature bit and
// a section of their own.
type MatchKind uint8

// Match kinds.
const (
	// MatchExact finds the row whose key is the lookup key.
	MatchExact MatchKind = 0
	// MatchSuffix: keys are domain names; a key matches itself and every
	// name below it (evil.com matches a.b.evil.com), the longest first.
	MatchSuffix MatchKind = 1
	// MatchRange: a table of inclusive integer ranges (FeatureRange, a
	// RANGE section); a lookup takes an integer.
	MatchRange MatchKind = 2
	// MatchWildcard: keys are globs ('*' any run of bytes); the most
	// literal characters win (FeatureWildcard, a WILDCARD section).
	MatchWildcard MatchKind = 3
	// MatchPattern: keys are regular expressions; the first in source
	// order wins (FeaturePattern, a PATTERN section).
	MatchPattern MatchKind = 4
)

var matchNames = [...]string{"exact", "suffix", "range", "wildcard", "pattern"}

// String returns the kind's name, as --match takes it.
func (k MatchKind) String() string {
	if int(k) < len(matchNames) {
		return matchNames[k]
	}
	return fmt.Sprintf("match-%d", uint8(k))
}

// ParseMatchKind returns the kind of a name; "" is exact.
func ParseMatchKind(name string) (MatchKind, error) {
	if name == "" {
		return MatchExact, nil
	}
	for i, n := range matchNames {
		if n == name {
			return MatchKind(i), nil
		}
	}
	return 0, fmt.Errorf("unknown match kind %q (want exact, suffix, range, wildcard or pattern)", name)
}

// MatchOf returns the match kind of a file's incompatible feature bits.
func MatchOf(incompat uint32) MatchKind {
	if incompat&FeatureSuffix != 0 {
		return MatchSuffix
	}
	if incompat&FeatureRange != 0 {
		return MatchRange
	}
	if incompat&FeatureWildcard != 0 {
		return MatchWildcard
	}
	if incompat&FeaturePattern != 0 {
		return MatchPattern
	}
	return MatchExact
}
