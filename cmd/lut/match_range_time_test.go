package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

// TestRangeTimeTable runs the CGNAT example of docs/matching.md: port
// blocks of a public address held by subscribers from one time to another,
// compiled as a range table bounded in time, looked up with --at (a block
// handed over at noon answers its new holder from 12:00:00 on) and
// --max-matches, verified, inspected, and exported then compiled back to
// the same bytes; rows that overlap in both ports and time are refused
// with both rows' file:line:column.
func TestRangeTimeTable(t *testing.T) {
	dir := t.TempDir()
	csv := writeTemp(t, dir, "cgnat.csv", "from,to,start,end,subscriber\n"+
		"1024,2047,2026-03-01T08:00:00Z,2026-03-01T12:00:00Z,sub-17\n"+
		"1024,2047,2026-03-01T12:00:00Z,,sub-42\n"+
		"2048,3071,,,sub-99\n"+
		"1024,65535,,,pool\n")
	tl := filepath.Join(dir, "cgnat.lut")
	flags := []string{"--match", "range", "--range-columns", "from,to", "--valid-from", "start", "--valid-to", "end"}
	_, stderr, code := run(t, append(append([]string{"compile"}, flags...), "--out", tl, csv)...)
	if code == 0 || !strings.Contains(stderr, "cgnat.csv:5:1: rows overlap in range and time: [1024, 65535] valid [open, open) of this row and [1024, 2047] valid [1772352000, 1772366400) of the row at ") ||
		!strings.Contains(stderr, "cgnat.csv:2:1 (use --overlap narrowest|first to allow it)") {
		t.Fatalf("rows overlapping in ports and time: exit %d, %s", code, stderr)
	}
	flags = append(flags, "--overlap", "narrowest")
	mustRun(t, append(append([]string{"compile"}, flags...), "--out", tl, csv)...)
	for _, c := range []struct {
		args []string
		want string
		code int
	}{
		{[]string{"--at", "2026-03-01T11:59:59Z", tl, "1500", "2048"},
			`{"from":"1024","to":"2047","start":"2026-03-01T08:00:00Z","end":"2026-03-01T12:00:00Z","subscriber":"sub-17"}` + "\n" +
				`{"from":"2048","to":"3071","start":"","end":"","subscriber":"sub-99"}` + "\n", 0},
		{[]string{"--at", "2026-03-01T12:00:00Z", tl, "2047", "70000"},
			`{"from":"1024","to":"2047","start":"2026-03-01T12:00:00Z","end":"","subscriber":"sub-42"}` + "\n", 1},
		{[]string{"--at", "1772330400", "--max-matches", "3", tl, "1500", "5000"}, // 02:00, before sub-17's block
			`[{"from":"1024","to":"65535","start":"","end":"","subscriber":"pool"}]` + "\n" +
				`[{"from":"1024","to":"65535","start":"","end":"","subscriber":"pool"}]` + "\n", 0},
		{[]string{"--at", "2026-03-01T12:00:00Z", "--max-matches", "3", tl, "1500"},
			`[{"from":"1024","to":"2047","start":"2026-03-01T12:00:00Z","end":"","subscriber":"sub-42"},{"from":"1024","to":"65535","start":"","end":"","subscriber":"pool"}]` + "\n", 0},
	} {
		got, _, code := run(t, append([]string{"get"}, c.args...)...)
		if got != c.want || code != c.code {
			t.Errorf("lut get %v: exit %d\n got %s\nwant %s", c.args, code, got, c.want)
		}
	}
	mustRun(t, "verify", tl)
	if out := mustRun(t, "inspect", tl); !strings.Contains(out, "--match range --range-columns from,to --valid-from start --valid-to end --overlap narrowest") ||
		!strings.Contains(out, "RANGE") || !strings.Contains(out, "TIMEBOUND") {
		t.Errorf("inspect does not show the range table bounded in time: %s", out)
	}
	// lut build: the same table from tables.yaml, the same bytes.
	writeTemp(t, dir, "tables.yaml", "tables:\n  - name: cgnat\n    sources: [cgnat.csv]\n    match: range\n"+
		"    range_columns: [from, to]\n    valid_from: start\n    valid_to: end\n    overlap: narrowest\n")
	out := filepath.Join(dir, "built")
	mustRun(t, "build", filepath.Join(dir, "tables.yaml"), "--out", out)
	built, _ := filepath.Glob(filepath.Join(out, "cgnat-*.lut"))
	if len(built) != 1 || !bytes.Equal(readFile(t, tl), readFile(t, built[0])) {
		t.Errorf("lut build of the tables.yaml gives %v, not the bytes of lut compile", built)
	}
	for _, format := range []string{"csv", "jsonl"} {
		exp := filepath.Join(dir, "export."+format)
		mustRun(t, "export", "--format", format, "-o", exp, tl)
		again := filepath.Join(dir, "again.lut")
		mustRun(t, append(append([]string{"compile"}, flags...), "--out", again, exp)...)
		if !bytes.Equal(readFile(t, tl), readFile(t, again)) {
			t.Errorf("export (%s) then compile does not give the same bytes", format)
		}
	}
}
