package main

import (
	"bytes"
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
	sec := readMatchingSection(t, "## IPv4 address ranges, at a time")
	dir := t.TempDir()
	t.Chdir(dir)
	writeFile(t, filepath.Join(dir, "blocks.csv"), sec.block("csv"))
	if n := sec.runConsole(); n != 4 {
		t.Fatalf("%d commands in the IPv4 example, want 4", n)
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
	writeFile(t, "blocks-new.csv", strings.Replace(sec.block("csv"), ",,,initech", ",,,umbrella", 1))
	mustRun(t, append(append([]string{"compile"}, flags...), "--out", "blocks-new.lut", "blocks-new.csv")...)
	out, _, code := run(t, "diff", "--limit", "5", "--exit-code", "blocks.lut", "blocks-new.lut")
	want := "0 added, 0 removed, 1 changed (3 rows -> 3 rows)\n" + `~ [10.1.3.0, 10.1.3.127] valid [open, open): customer: "initech" -> "umbrella"`
	if code != 1 || strings.TrimSpace(out) != want {
		t.Errorf("diff of IPv4 block tables: exit %d\n%s\nwant\n%s", code, out, want)
	}
}
