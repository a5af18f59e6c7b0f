package format

import (
	"fmt"
	"regexp/syntax"
)

// Pattern checks
//
// The compiler refuses a pattern that compiles but can never match (a
// row that is never an answer is a mistake in the list), and one whose
// program is larger than MaxPatternInst instructions. What "can never
// match" detects is syntactic and cheap (neverMatch): a sure refusal,
// not a complete one.

// MaxPatternInst bounds the program of a pattern (regexp/syntax's
// instructions, after simplification, as regexp compiles it): ten times
// a counted repetition at its largest, x{1000}, which Go allows. A
// lookup that runs a pattern steps through up to that many instructions
// for each byte of the key, and each of its matching machines keeps two
// queues of that many entries; the user-agent patterns of
// docs/matching.md have at most 31 (TestPatternInstDoc).
const MaxPatternInst = 10000

// CheckPattern reports why the compiler refuses a valid pattern: it can
// never match, or its program is larger than MaxPatternInst; nil when it
// is accepted. An invalid pattern is an error, as its parse gives it
// (the compiler has run PatternAnchors on it first).
func CheckPattern(pattern []byte) error {
	re, err := syntax.Parse(string(pattern), syntax.Perl)
	if err != nil {
		return err
	}
	re = re.Simplify()
	if why := neverMatch(re); why != "" {
		return fmt.Errorf("the pattern can never match: %s", why)
	}
	prog, err := syntax.Compile(re)
	if err != nil {
		return err
	}
	if n := len(prog.Inst); n > MaxPatternInst {
		return fmt.Errorf("the pattern compiles to %d instructions, more than %d (each lookup that runs it steps through up to that many per byte of the key)", n, MaxPatternInst)
	}
	return nil
}

// neverMatch returns why re can match no text, or "" when no reason is
// found: an empty character class, an operand that must be matched and
// cannot, the start of the text (^, \A) after a character, the end of
// the text ($, \z) before one, or a word boundary (\b, \B) between two
// literal characters that contradict it.
func neverMatch(re *syntax.Regexp) string {
	switch re.Op {
	case syntax.OpNoMatch:
		return "it has an empty character class"
	case syntax.OpCharClass:
		if len(re.Rune) == 0 {
			return "it has an empty character class"
		}
	case syntax.OpCapture, syntax.OpPlus:
		return neverMatch(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return neverMatch(re.Sub[0])
		}
	case syntax.OpAlternate:
		why := ""
		for _, sub := range re.Sub {
			if why = neverMatch(sub); why == "" {
				return ""
			}
		}
		return why
	case syntax.OpConcat:
		for _, sub := range re.Sub {
			if why := neverMatch(sub); why != "" {
				return why
			}
		}
		return impossibleAssertion(re.Sub)
	}
	return ""
}

// impossibleAssertion returns why the operands of a concatenation
// contradict an assertion among them, or "".
func impossibleAssertion(subs []*syntax.Regexp) string {
	consumed := false
	for _, s := range subs {
		if consumed && asserts(s, syntax.OpBeginText, true) {
			return "it asserts the start of the text (^ or \\A) after a character"
		}
		consumed = consumed || consumes(s)
	}
	consumed = false
	for i := len(subs) - 1; i >= 0; i-- {
		if consumed && asserts(subs[i], syntax.OpEndText, false) {
			return "it asserts the end of the text ($ or \\z) before a character"
		}
		consumed = consumed || consumes(subs[i])
	}
	for i := 1; i+1 < len(subs); i++ {
		op := subs[i].Op
		if op != syntax.OpWordBoundary && op != syntax.OpNoWordBoundary {
			continue
		}
		prev, next := subs[i-1], subs[i+1]
		if prev.Op != syntax.OpLiteral || next.Op != syntax.OpLiteral || (prev.Flags|next.Flags)&syntax.FoldCase != 0 {
			continue
		}
		a, b := isWordChar(prev.Rune[len(prev.Rune)-1]), isWordChar(next.Rune[0])
		if op == syntax.OpWordBoundary && a == b {
			return "it asserts a word boundary (\\b) between two characters on one side of it"
		}
		if op == syntax.OpNoWordBoundary && a != b {
			return "it asserts no word boundary (\\B) between a word character and another"
		}
	}
	return ""
}

// asserts reports whether every match of re asserts op at its start
// (first) or its end (!first).
func asserts(re *syntax.Regexp, op syntax.Op, first bool) bool {
	switch re.Op {
	case op:
		return true
	case syntax.OpCapture, syntax.OpPlus:
		return asserts(re.Sub[0], op, first)
	case syntax.OpRepeat:
		return re.Min >= 1 && asserts(re.Sub[0], op, first)
	case syntax.OpConcat:
		if len(re.Sub) == 0 {
			return false
		}
		if first {
			return asserts(re.Sub[0], op, first)
		}
		return asserts(re.Sub[len(re.Sub)-1], op, first)
	case syntax.OpAlternate:
		for _, sub := range re.Sub {
			if !asserts(sub, op, first) {
				return false
			}
		}
		return len(re.Sub) > 0
	}
	return false
}

// consumes reports whether every match of re holds at least one
// character.
func consumes(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpLiteral:
		return len(re.Rune) > 0
	case syntax.OpCharClass, syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return true
	case syntax.OpCapture, syntax.OpPlus:
		return consumes(re.Sub[0])
	case syntax.OpRepeat:
		return re.Min >= 1 && consumes(re.Sub[0])
	case syntax.OpConcat:
		for _, sub := range re.Sub {
			if consumes(sub) {
				return true
			}
		}
	case syntax.OpAlternate:
		for _, sub := range re.Sub {
			if !consumes(sub) {
				return false
			}
		}
		return len(re.Sub) > 0
	}
	return false
}

// isWordChar reports whether r is a word character of \b: ASCII letters,
// digits and '_'.
func isWordChar(r rune) bool {
	return r == '_' || '0' <= r && r <= '9' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z'
}
