package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRangeIPv4CLI runs the IPv4 block example of docs/matching.md (its
// CSV, its commands and the output each shows, a get shown without output
// finding nothing), then verify, inspect, export (CSV and JSON lines)
// then compile giving the same bytes, and lut diff naming rows by their
// address ranges and validities.
func TestRangeIPv4CLI(t *testing.T) {
	doc, err := os.ReadFile("../../docs/matching.md")
	if err != nil {
		t.Fatal(err)
	}
	const heading = "## IPv4 address ranges, at a time"
	_, text, ok := strings.Cut(string(doc), heading+"\n")
	if !ok {
		t.Fatalf("docs/matching.md has no %q", heading)
	}
	text, _, _ = strings.Cut(text, "\n## ")
	block := func(lang string) string {
		_, rest, ok := strings.Cut(text, "```"+lang+"\n")
		if !ok {
			t.Fatalf("the IPv4 section has no %s block", lang)
		}
		body, _, _ := strings.Cut(rest, "```")
		return body
	}
	dir := t.TempDir()
	t.Chdir(dir)
	writeFile(t, filepath.Join(dir, "blocks.csv"), block("csv"))
	type step struct{ args, want []string }
	var steps []step
	for _, line := range strings.Split(strings.TrimSpace(block("console")), "\n") {
		if cmd, ok := strings.CutPrefix(line, "$ lut "); ok {
			steps = append(steps, step{args: shellWords(cmd)})
		} else {
			steps[len(steps)-1].want = append(steps[len(steps)-1].want, line)
		}
	}
	if len(steps) != 4 {
		t.Fatalf("%d commands in the IPv4 example, want 4", len(steps))
	}
	for _, s := range steps {
		out, errs, code := run(t, s.args...)
		got, want := strings.TrimSpace(out), strings.Join(s.want, "\n")
		if s.args[0] == "get" && len(s.want) == 0 {
			if code != 1 || got != "" {
				t.Errorf("lut %q: exit %d, %q; want exit 1 (not found)", s.args, code, out)
			}
			continue
		}
		if code != 0 || (s.args[0] == "get" && got != want) {
			t.Errorf("lut %q: exit %d, output %q, want %q: %s", s.args, code, got, want, errs)
		}
	}
	flags := []string{"--match", "range", "--range-columns", "from,to", "--valid-from", "start", "--valid-to", "end"}
	mustRun(t, "verify", "blocks.lut")
	if out := mustRun(t, "inspect", "blocks.lut"); !strings.Contains(out, "match:    "+strings.Join(flags, " ")+"\n") {
		t.Errorf("inspect does not show the flags:\n%s", out)
	}
	for _, format := range []string{"csv", "jsonl"} {
		exp := "export." + format
		mustRun(t, "export", "--format", format, "-o", exp, "blocks.lut")
		mustRun(t, append(append([]string{"compile"}, flags...), "--out", "again.lut", exp)...)
		if !bytes.Equal(readFile(t, "blocks.lut"), readFile(t, "again.lut")) {
			t.Errorf("export (%s) then compile does not give the same bytes", format)
		}
	}
	writeFile(t, "blocks-new.csv", strings.Replace(block("csv"), ",,,initech", ",,,umbrella", 1))
	mustRun(t, append(append([]string{"compile"}, flags...), "--out", "blocks-new.lut", "blocks-new.csv")...)
	out, _, code := run(t, "diff", "--limit", "5", "--exit-code", "blocks.lut", "blocks-new.lut")
	want := "0 added, 0 removed, 1 changed (3 rows -> 3 rows)\n" + `~ [10.1.3.0, 10.1.3.127] valid [open, open): customer: "initech" -> "umbrella"`
	if code != 1 || strings.TrimSpace(out) != want {
		t.Errorf("diff of IPv4 block tables: exit %d\n%s\nwant\n%s", code, out, want)
	}
}
