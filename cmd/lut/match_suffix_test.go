package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const iocCSV = "domain,threat\n*.Evil.com,malware\nbad.evil.com,c2\n.example.org,phish\nco.uk,tld\n"

// A suffix table through the CLI: lut get answers a name below a listed
// one; export then compile with the --match inspect shows gives the same
// bytes in every export format; verify, inspect and diff know the kind.
func TestSuffixCLI(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("SOURCE_DATE_EPOCH", "1700000000")
	src := writeFile(t, filepath.Join(dir, "ioc.csv"), iocCSV)
	a := filepath.Join(dir, "ioc.lut")
	mustRun(t, "compile", "--key", "domain", "--match", "suffix", "--out", a, src)
	if out := mustRun(t, "get", a, "www.A.Bad.Evil.COM"); !strings.Contains(out, `"threat":"malware"`) && !strings.Contains(out, `"c2"`) {
		t.Fatalf("get: %s", out)
	}
	if out := mustRun(t, "get", a, "x.bad.evil.com"); !strings.Contains(out, `"threat":"c2"`) {
		t.Fatalf("get x.bad.evil.com: %s", out)
	}
	if _, _, code := run(t, "get", a, "notevil.com"); code != 1 {
		t.Fatalf("get notevil.com: exit %d, want 1 (not found)", code)
	}
	text := mustRun(t, "inspect", a)
	if !strings.Contains(text, "match:    --match suffix") || !strings.Contains(text, "SUFFIX") || !strings.Contains(text, "version 1.2") {
		t.Fatalf("inspect:\n%s", text)
	}
	var info map[string]any
	if err := json.Unmarshal([]byte(mustRun(t, "inspect", "--json", a)), &info); err != nil {
		t.Fatal(err)
	}
	if info["match"] != "suffix" || len(info["sections"].([]any)) != 6 {
		t.Fatalf("inspect --json: match %v, sections %v", info["match"], info["sections"])
	}
	if out := mustRun(t, "verify", a); !strings.Contains(out, "ok (4 rows, 6 sections") {
		t.Fatalf("verify: %s", out)
	}
	for _, f := range []string{"csv", "tsv", "parquet"} {
		exp := filepath.Join(dir, "export."+f)
		mustRun(t, "export", a, "--format", f, "-o", exp)
		again := filepath.Join(dir, "again-"+f+".lut")
		mustRun(t, "compile", "--key", "domain", "--match", "suffix", "--out", again, exp)
		if sha(t, again) != sha(t, a) {
			t.Fatalf("export as %s then compile gave a different file", f)
		}
	}
	// --fold-case is implied: giving it changes nothing.
	folded := filepath.Join(dir, "folded.lut")
	mustRun(t, "compile", "--key", "domain", "--match", "suffix", "--fold-case", "--out", folded, src)
	if sha(t, folded) != sha(t, a) {
		t.Fatal("--fold-case changed a suffix table")
	}
	// diff compares rows by their stored keys, not by their best match:
	// b lists a.evil.com, which a answers by evil.com's row.
	b := filepath.Join(dir, "b.lut")
	mustRun(t, "compile", "--key", "domain", "--match", "suffix", "--out", b,
		writeFile(t, filepath.Join(dir, "b.csv"), "domain,threat\nevil.com,malware\nbad.evil.com,botnet\na.evil.com,x\n.example.org,phish\nco.uk,tld\n"))
	out := mustRun(t, "diff", "--limit", "5", a, b)
	for _, want := range []string{"1 added, 0 removed, 2 changed", `+ "a.evil.com"`, `~ "bad.evil.com": threat: "c2" -> "botnet"`} {
		if !strings.Contains(out, want) {
			t.Fatalf("diff output lacks %q:\n%s", want, out)
		}
	}
	exact := filepath.Join(dir, "exact.lut")
	mustRun(t, "compile", "--key", "domain", "--out", exact, src)
	if out := mustRun(t, "diff", exact, a); !strings.Contains(out, "match changed: exact -> suffix") {
		t.Fatalf("diff of an exact and a suffix table:\n%s", out)
	}
}

func TestSuffixCLIErrors(t *testing.T) {
	dir := t.TempDir()
	src := writeFile(t, filepath.Join(dir, "bad.csv"), "domain,threat\nevil.com,x\nweb-*.com,y\n")
	_, errs, code := run(t, "compile", "--key", "domain", "--match", "suffix", "--out", filepath.Join(dir, "t.lut"), src)
	if code == 0 || !strings.Contains(errs, "bad.csv:3:1:") || !strings.Contains(errs, `leading "*."`) {
		t.Fatalf("exit %d: %s", code, errs)
	}
	_, errs, code = run(t, "compile", "--key", "domain", "--match", "regex", "--out", filepath.Join(dir, "t.lut"), src)
	if code != 2 || !strings.Contains(errs, "--match") || !strings.Contains(errs, "unknown match kind") {
		t.Fatalf("exit %d: %s", code, errs)
	}
}

// TestMatchingDoc runs the example of docs/matching.md: its CSV, its
// commands, and the output it shows for each (a command shown without
// output must find nothing).
func TestMatchingDoc(t *testing.T) {
	doc, err := os.ReadFile("../../docs/matching.md")
	if err != nil {
		t.Fatal(err)
	}
	block := func(lang string) string {
		_, rest, ok := strings.Cut(string(doc), "```"+lang+"\n")
		if !ok {
			t.Fatalf("docs/matching.md has no %s block", lang)
		}
		body, _, _ := strings.Cut(rest, "```")
		return body
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "ioc-domains.csv"), block("csv"))
	t.Chdir(dir)
	type step struct{ args, want []string }
	var steps []step
	for _, line := range strings.Split(strings.TrimSpace(block("console")), "\n") {
		if cmd, ok := strings.CutPrefix(line, "$ lut "); ok {
			steps = append(steps, step{args: strings.Fields(cmd)})
		} else {
			steps[len(steps)-1].want = append(steps[len(steps)-1].want, line)
		}
	}
	if len(steps) < 5 {
		t.Fatalf("%d commands in the doc's example", len(steps))
	}
	for _, s := range steps {
		out, errs, code := run(t, s.args...)
		got := strings.TrimSpace(out)
		want := strings.Join(s.want, "\n")
		if s.args[0] == "get" && len(s.want) == 0 {
			if code != 1 {
				t.Errorf("lut %s: exit %d, want 1 (not found): %s", strings.Join(s.args, " "), code, out)
			}
			continue
		}
		if code != 0 || (s.args[0] == "get" && got != want) {
			t.Errorf("lut %s: exit %d, output %q, want %q: %s", strings.Join(s.args, " "), code, got, want, errs)
		}
	}
}
