package format

import (
	"regexp"
	"regexp/syntax"
	"unicode/utf8"
)

// Pattern tables
//
// The key of a row of a pattern table is a regular expression in RE2
// syntax (Go's regexp), matched anywhere in the lookup key unless it is
// anchored (^, $, \A, \z). A lookup key gets the first matching row in
// source order. The PATTERN section (a literal index, match_literal.go)
// anchors each pattern on literals every match of it contains, found in
// its syntax tree (PatternAnchors): one of the strings of an alternation
// of literals, the longest literal of a concatenation, the literal of a
// repetition of at least one. A pattern with none (.*, \d+, [a-z]{3}) is
// always checked.

// SectionPattern is the literal index of a pattern table.
const SectionPattern = 8

// FeaturePattern: keys are regular expressions (version 1.2, a PATTERN
// section).
const FeaturePattern uint32 = 1 << 4

// maxPatternAnchors bounds the anchors of one pattern: an alternation of
// more literals than this is always checked.
const maxPatternAnchors = 64

// CompilePattern compiles a pattern as a lookup runs it.
func CompilePattern(pattern []byte) (*regexp.Regexp, error) {
	return regexp.Compile(string(pattern))
}

// PatternAnchors returns the anchors of a valid pattern: strings of which
// every text the pattern matches contains one, ASCII case aside; nil when
// it has none that are sure (the pattern is then always checked). An
// invalid pattern is an error, as regexp.Compile gives it.
func PatternAnchors(pattern []byte) ([][]byte, error) {
	if _, err := CompilePattern(pattern); err != nil {
		return nil, err
	}
	re, err := syntax.Parse(string(pattern), syntax.Perl)
	if err != nil {
		return nil, err
	}
	set, ok := factors(re.Simplify())
	if !ok {
		return nil, nil
	}
	out := make([][]byte, len(set))
	for i, s := range set {
		out[i] = []byte(s)
	}
	return out, nil
}

// factors returns a set of literals of which every match of re contains
// one (false: none known).
func factors(re *syntax.Regexp) ([]string, bool) {
	switch re.Op {
	case syntax.OpLiteral:
		s := literalFactor(re.Rune, re.Flags&syntax.FoldCase != 0)
		return []string{s}, s != ""
	case syntax.OpCapture, syntax.OpPlus:
		return factors(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return factors(re.Sub[0])
		}
	case syntax.OpConcat:
		var best []string
		for _, sub := range re.Sub {
			if set, ok := factors(sub); ok && better(set, best) {
				best = set
			}
		}
		return best, best != nil
	case syntax.OpAlternate:
		var all []string
		for _, sub := range re.Sub {
			set, ok := factors(sub)
			if !ok || len(all)+len(set) > maxPatternAnchors {
				return nil, false
			}
			all = append(all, set...)
		}
		return all, true
	}
	return nil, false
}

// better reports whether set is a better prefilter than best (nil: none
// yet): a longer shortest literal, then fewer literals.
func better(set, best []string) bool {
	if best == nil {
		return true
	}
	short := func(s []string) int {
		n := len(s[0])
		for _, x := range s {
			n = min(n, len(x))
		}
		return n
	}
	if a, b := short(set), short(best); a != b {
		return a > b
	}
	return len(set) < len(best)
}

// literalFactor returns the longest run of a literal's runes that a
// match contains byte for byte, ASCII case aside: not U+FFFD (which
// matches an invalid byte), and in a case-folded literal only ASCII
// runes other than k and s (whose folds include the Kelvin sign and the
// long s).
func literalFactor(runes []rune, fold bool) string {
	var best, cur []byte
	for _, r := range runes {
		ok := r != utf8.RuneError
		if fold {
			ok = r < utf8.RuneSelf && r != 'k' && r != 'K' && r != 's' && r != 'S'
		}
		if !ok {
			cur = cur[:0]
			continue
		}
		cur = utf8.AppendRune(cur, r)
		if len(cur) > len(best) {
			best = append(best[:0], cur...)
		}
	}
	return string(best)
}

// PatternRows returns the rows of a pattern table, given their keys and
// records in source order, in rank order (source order), or the first
// error of a pattern (its index).
func PatternRows(keys [][]byte, offs []uint64) ([]LiteralRow, int, error) {
	out := make([]LiteralRow, len(keys))
	for i, k := range keys {
		a, err := PatternAnchors(k)
		if err != nil {
			return nil, i, err
		}
		out[i] = LiteralRow{Off: offs[i], Anchors: a}
	}
	return out, 0, nil
}
