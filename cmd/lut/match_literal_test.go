package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// A wildcard and a pattern table through the CLI: lut get answers the
// best match, --max-matches every match in order; export then compile
// with the --match inspect shows gives the same bytes in every export
// format; verify and inspect know the kinds.
func TestLiteralCLI(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("SOURCE_DATE_EPOCH", "1700000000")
	for _, c := range []struct {
		kind, csv, section string
		fold               bool
		get                map[string]string // key: the id it finds, "" none
	}{
		{"wildcard", "key,id\nweb-*,1\n*-db-*,2\n\"*,quoted\"\"*\",3\nWEB-DB-*,4\n*,5\n", "WILDCARD", false,
			map[string]string{"web-db-1": "1", "WEB-DB-1": "4", "x,quoted\"y": "3", "other": "5"}},
		{"wildcard", "key,id\nWeb-*,1\n*.Corp,2\n", "WILDCARD", true,
			map[string]string{"WEB-1": "1", "a.corp": "2", "other": ""}},
		{"pattern", "key,id\n\"a{2,3}\"\"x\",1\n(?i)^web-\\d+$,2\n\\bdb\\b,3\n.*,4\n", "PATTERN", false,
			map[string]string{"aa\"x": "1", "WEB-12": "2", "my db here": "3", "web-x": "4"}},
	} {
		name := c.kind
		if c.fold {
			name += "-folded"
		}
		src := filepath.Join(dir, name+".csv")
		writeFile(t, src, c.csv)
		a := filepath.Join(dir, name+".lut")
		flags := []string{"--key", "key", "--match", c.kind}
		if c.fold {
			flags = append(flags, "--fold-case")
		}
		mustRun(t, append(append([]string{"compile"}, flags...), "--out", a, src)...)
		for k, want := range c.get {
			out, _, code := run(t, "get", a, k)
			if want == "" {
				if code != 1 {
					t.Errorf("%s: get %q: exit %d, want 1 (not found)", c.kind, k, code)
				}
				continue
			}
			var row map[string]string
			if code != 0 || json.Unmarshal([]byte(out), &row) != nil || row["id"] != want {
				t.Errorf("%s: get %q: exit %d, %s; want id %s", c.kind, k, code, out, want)
			}
		}
		text := mustRun(t, "inspect", a)
		if !strings.Contains(text, "match:    --match "+c.kind) || !strings.Contains(text, c.section) || !strings.Contains(text, "version 1.2") {
			t.Fatalf("inspect:\n%s", text)
		}
		var info map[string]any
		if err := json.Unmarshal([]byte(mustRun(t, "inspect", "--json", a)), &info); err != nil || info["match"] != c.kind {
			t.Fatalf("inspect --json: %v, match %v", err, info["match"])
		}
		if out := mustRun(t, "verify", a); !strings.Contains(out, "ok (") {
			t.Fatalf("verify: %s", out)
		}
		for _, f := range []string{"csv", "tsv", "parquet", "jsonl"} {
			exp := filepath.Join(dir, "export."+f)
			mustRun(t, "export", a, "--format", f, "-o", exp)
			again := filepath.Join(dir, "again-"+f+".lut")
			mustRun(t, append(append([]string{"compile"}, flags...), "--out", again, exp)...)
			if sha(t, again) != sha(t, a) {
				t.Fatalf("%s: export as %s then compile gave a different file", c.kind, f)
			}
		}
	}
	out := mustRun(t, "get", "--max-matches", "5", filepath.Join(dir, "wildcard.lut"), "web-db-1")
	if strings.TrimSpace(out) != `[{"key":"web-*","id":"1"},{"key":"*-db-*","id":"2"},{"key":"*","id":"5"}]` {
		t.Fatalf("get --max-matches 5 web-db-1: %s", out)
	}
}

func TestLiteralCLIErrors(t *testing.T) {
	dir := t.TempDir()
	src := writeFile(t, filepath.Join(dir, "bad.csv"), "id,pattern\n1,ok\n2,(bad\n")
	_, errs, code := run(t, "compile", "--key", "pattern", "--match", "pattern", "--out", filepath.Join(dir, "t.lut"), src)
	if code == 0 || !strings.Contains(errs, "bad.csv:3:3:") || !strings.Contains(errs, "missing closing )") {
		t.Fatalf("exit %d: %s", code, errs)
	}
	_, errs, code = run(t, "compile", "--key", "pattern", "--match", "pattern", "--fold-case", "--out", filepath.Join(dir, "t.lut"), src)
	if code != 2 || !strings.Contains(errs, "(?i)") {
		t.Fatalf("pattern with --fold-case: exit %d: %s", code, errs)
	}
	src = writeFile(t, filepath.Join(dir, "empty.csv"), "host,id\nweb-*,1\n,2\n")
	_, errs, code = run(t, "compile", "--key", "host", "--match", "wildcard", "--out", filepath.Join(dir, "t.lut"), src)
	if code == 0 || !strings.Contains(errs, "empty.csv:3:1:") || !strings.Contains(errs, "empty wildcard key") {
		t.Fatalf("exit %d: %s", code, errs)
	}
}

// TestMatchingDocLiteral runs the wildcard and pattern examples of
// docs/matching.md: each section's CSV, its commands (arguments in
// single quotes kept whole), and the output it shows for each (a get
// shown without output must find nothing).
func TestMatchingDocLiteral(t *testing.T) {
	examples := []struct {
		sec matchingSection
		csv string
	}{
		{readMatchingSection(t, "## Wildcard: host groups"), "hostgroups.csv"},
		{readMatchingSection(t, "## Pattern: a user-agent list"), "user-agents.csv"},
	}
	dir := t.TempDir()
	t.Chdir(dir)
	for _, ex := range examples {
		writeFile(t, filepath.Join(dir, ex.csv), ex.sec.block("csv"))
		if n := ex.sec.runConsole(); n < 3 {
			t.Fatalf("%s: %d commands", ex.sec.heading, n)
		}
	}
}

// shellWords splits a command line at spaces, keeping what is between
// single quotes whole.
func shellWords(s string) []string {
	var out []string
	var cur strings.Builder
	quoted, any := false, false
	for _, r := range s {
		switch {
		case r == '\'':
			quoted, any = !quoted, true
		case r == ' ' && !quoted:
			if any {
				out = append(out, cur.String())
			}
			cur.Reset()
			any = false
		default:
			cur.WriteRune(r)
			any = true
		}
	}
	if any {
		out = append(out, cur.String())
	}
	return out
}
