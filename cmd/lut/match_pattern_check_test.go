package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// A pattern that can never match, or compiles to too large a program,
// fails lut compile at its file:line:column, as does one without a
// literal under --strict-patterns (or strict_patterns in tables.yaml);
// without it, that pattern is a warning on stderr at its position and a
// count in the summary, and the table is written.
func TestPatternChecksCLI(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "t.lut")
	for _, c := range []struct{ pattern, want string }{
		{`"ab[^\x00-\x{10FFFF}]"`, "can never match: it has an empty character class"},
		{`a^b`, "can never match: it asserts the start of the text"},
		{`$a`, "can never match: it asserts the end of the text"},
		{`a\bb`, `can never match: it asserts a word boundary (\b)`},
		{strings.Repeat(`\w{1000}`, 11), "instructions, more than 10000"},
	} {
		src := writeFile(t, filepath.Join(dir, "refused.csv"), "id,pattern\n1,^curl/\n2,"+c.pattern+"\n")
		_, errs, code := run(t, "compile", "--key", "pattern", "--match", "pattern", "--out", out, src)
		if code != 1 || !strings.Contains(errs, "refused.csv:3:3:") || !strings.Contains(errs, c.want) {
			t.Errorf("%.30s: exit %d: %s; want %q at refused.csv:3:3", c.pattern, code, errs, c.want)
		}
	}
	src := writeFile(t, filepath.Join(dir, "agents.csv"), "id,pattern\n1,^curl/\\d+\n2,\\d{3}[-.]\\d{4}\n3,(?i)bot|crawl\n4,.*\n")
	_, errs, code := run(t, "compile", "--key", "pattern", "--match", "pattern", "--out", out, src)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{
		`warning: ` + src + `:3:3: key column "pattern": "\\d{3}[-.]\\d{4}": no literal is in every match of it: it is run on every lookup`,
		`warning: ` + src + `:5:3: key column "pattern": ".*"`,
		"4 rows", "2 patterns without a literal, run on every lookup",
	} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
	if n := strings.Count(errs, "warning: "); n != 2 {
		t.Errorf("%d warnings, want 2:\n%s", n, errs)
	}
	if got, _, code := run(t, "get", out, "555-1234"); code != 0 || !strings.Contains(got, `"id":"2"`) {
		t.Errorf("get 555-1234: exit %d: %s", code, got)
	}
	_, errs, code = run(t, "compile", "--key", "pattern", "--match", "pattern", "--strict-patterns", "--out", filepath.Join(dir, "strict.lut"), src)
	if code != 1 || !strings.Contains(errs, "agents.csv:3:3:") || !strings.Contains(errs, "run on every lookup") {
		t.Errorf("--strict-patterns: exit %d: %s", code, errs)
	}
	if _, _, code := run(t, "get", filepath.Join(dir, "strict.lut"), "x"); code == 0 {
		t.Errorf("--strict-patterns left a table")
	}
	_, errs, code = run(t, "compile", "--key", "pattern", "--match", "wildcard", "--strict-patterns", "--out", out, src)
	if code != 2 || !strings.Contains(errs, "--strict-patterns") || !strings.Contains(errs, "pattern tables only") {
		t.Errorf("--strict-patterns on a wildcard table: exit %d: %s", code, errs)
	}
	// tables.yaml: strict_patterns is the same option.
	writeFile(t, filepath.Join(dir, "tables.yaml"), "tables:\n  - name: agents\n    sources: [agents.csv]\n    key: pattern\n    match: pattern\n    strict_patterns: true\n")
	_, errs, code = run(t, "build", filepath.Join(dir, "tables.yaml"), "--out", filepath.Join(dir, "dist"), "-q")
	if code == 0 || !strings.Contains(errs, "agents.csv:3:3:") || !strings.Contains(errs, "run on every lookup") {
		t.Errorf("lut build with strict_patterns: exit %d: %s", code, errs)
	}
	writeFile(t, filepath.Join(dir, "tables.yaml"), "tables:\n  - name: agents\n    sources: [agents.csv]\n    key: pattern\n    match: pattern\n")
	mustRun(t, "build", filepath.Join(dir, "tables.yaml"), "--out", filepath.Join(dir, "dist"), "-q")
}
