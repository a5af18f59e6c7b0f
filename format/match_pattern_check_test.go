package format

import (
	"regexp"
	"regexp/syntax"
	"strings"
	"testing"
)

// The patterns CheckPattern refuses, and patterns that look close to
// them and can match, which it accepts.
func TestCheckPattern(t *testing.T) {
	for _, c := range []struct{ p, want string }{
		{`[^\x00-\x{10FFFF}]`, "empty character class"},
		{`ab[^\x00-\x{10FFFF}]c`, "empty character class"},
		{`(x|[^\x00-\x{10FFFF}]y)[^\x00-\x{10FFFF}]`, "empty character class"},
		{`a^b`, "start of the text"},
		{`a\Ab`, "start of the text"},
		{`x+(^y|^z)`, "start of the text"},
		{`$a`, "end of the text"},
		{`a\z.`, "end of the text"},
		{`(a$|b$)c`, "end of the text"},
		{`a\bb`, `word boundary (\b)`},
		{`-\b-`, `word boundary (\b)`},
		{`a\B-`, `no word boundary (\B)`},
		{strings.Repeat(`\w{1000}`, 11), "more than 10000"},
		{strings.Repeat(`(foo|bar|baz)`, 2000), "more than 10000"},
		{"(ab", "missing closing )"},
	} {
		if err := CheckPattern([]byte(c.p)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("CheckPattern(%.40q) = %v, want %q", c.p, err, c.want)
		}
	}
	for _, p := range []string{
		`^a`, `a$`, `a*^b`, `(?m)a\n^b`, `a?$`, `$`, `^$`, `^`, `\bab\b`, `a\b-`, `a\Bb`, `(?i)k\bk`, `(^a|b)c`,
		`(?i)googlebot`, `^Mozilla/5\.0 .*Firefox/\d+`, `[^\x00-\x{10FFFF}]*a`, `(a|[^\x00-\x{10FFFF}])`, `x{1000}`,
		strings.Repeat(`\w{1000}`, 9), `$\z`, `\A^a`,
	} {
		if err := CheckPattern([]byte(p)); err != nil {
			t.Errorf("CheckPattern(%.40q) = %v, want it accepted", p, err)
		}
	}
}

// A pattern that CheckPattern says can never match matches no key.
func FuzzPatternNever(f *testing.F) {
	for _, s := range []struct{ p, k string }{
		{`a^b`, "ab"}, {`$a`, "a"}, {`a\bb`, "ab"}, {`a\B-`, "a-"}, {`(a$|b$)c`, "ac"}, {`x+(^y|^z)`, "xy"},
		{`(?i)k\bk`, "k\u212a"}, {`a*^b`, "b"}, {`[^\x00-\x{10FFFF}]`, "\xff"}, {`(?m)a$\nb`, "a\nb"},
	} {
		f.Add(s.p, s.k)
	}
	f.Fuzz(func(t *testing.T, p, k string) {
		if len(p) > 200 {
			return
		}
		re, err := regexp.Compile(p)
		if err != nil {
			return
		}
		err = CheckPattern([]byte(p))
		if err == nil || !strings.Contains(err.Error(), "can never match") {
			return
		}
		for _, key := range []string{k, "", p} {
			if re.MatchString(key) {
				t.Fatalf("%q matches %q, and CheckPattern says %v", p, key, err)
			}
		}
	})
}

// The instruction counts docs/matching.md gives: x{1000}, and the most of
// its user-agent patterns.
func TestPatternInstDoc(t *testing.T) {
	inst := func(p string) int {
		re, err := syntax.Parse(p, syntax.Perl)
		if err != nil {
			t.Fatal(err)
		}
		prog, err := syntax.Compile(re.Simplify())
		if err != nil {
			t.Fatal(err)
		}
		return len(prog.Inst)
	}
	if n := inst(`x{1000}`); n != 1002 {
		t.Errorf("x{1000}: %d instructions, the docs say 1,002", n)
	}
	most := 0
	for _, p := range []string{`(?i)googlebot|bingbot|duckduckbot`, `^curl/\d+`, `^Mozilla/5\.0 .*\bEdg/\d+`,
		`^Mozilla/5\.0 .*Firefox/\d+`, `^Mozilla/5\.0 .*Chrome/\d+`, `(?i)bot|crawl|spider`} {
		most = max(most, inst(p))
	}
	if most != 31 {
		t.Errorf("the docs' user-agent patterns have at most %d instructions, the docs say 31", most)
	}
}
