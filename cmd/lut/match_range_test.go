package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeTemp writes s to the file name in dir and returns its path.
func writeTemp(t *testing.T, dir, name, s string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRangeAndLeaseTables runs the worked examples of docs/matching.md: a
// port-range table and a DHCP lease table compiled, looked up (with --at
// and --max-matches), verified, inspected, and exported then compiled
// back to the same bytes; overlapping ranges are refused with both rows'
// file:line:column.
func TestRangeAndLeaseTables(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string { return writeTemp(t, dir, name, s) }
	ports := write("ports.csv", "from,to,service\n0,1023,system\n1024,49151,registered\n443,443,https\n49152,65535,dynamic\n")
	pl := filepath.Join(dir, "ports.lut")
	_, stderr, code := run(t, "compile", "--match", "range", "--range-columns", "from,to", "--out", pl, ports)
	if code == 0 || !strings.Contains(stderr, "ports.csv:4:1: ranges overlap") || !strings.Contains(stderr, "ports.csv:2:1") {
		t.Fatalf("overlapping ranges: exit %d, %s", code, stderr)
	}
	mustRun(t, "compile", "--match", "range", "--range-columns", "from,to", "--overlap", "narrowest", "--out", pl, ports)
	got, _, code := run(t, "get", pl, "80", "443", "70000")
	want := `{"from":"0","to":"1023","service":"system"}` + "\n" + `{"from":"443","to":"443","service":"https"}` + "\n"
	if got != want || code != 1 {
		t.Errorf("lut get ports: exit %d\n got %s\nwant %s", code, got, want)
	}
	got = mustRun(t, "get", "--max-matches", "3", pl, "443", "8080")
	want = `[{"from":"443","to":"443","service":"https"},{"from":"0","to":"1023","service":"system"}]` + "\n" +
		`[{"from":"1024","to":"49151","service":"registered"}]` + "\n"
	if got != want {
		t.Errorf("lut get --max-matches:\n got %s\nwant %s", got, want)
	}
	if out := mustRun(t, "inspect", pl); !strings.Contains(out, "--match range --range-columns from,to --overlap narrowest") || !strings.Contains(out, "RANGE") {
		t.Errorf("inspect does not show the range table: %s", out)
	}

	leases := write("leases.csv", "ip,start,end,user\n"+
		"10.1.2.3,2026-03-01T08:00:00Z,2026-03-01T12:00:00Z,ann\n"+
		"10.1.2.3,2026-03-01T12:00:00Z,,bob\n"+
		"10.1.2.4,,1772366400,carl\n")
	ll := filepath.Join(dir, "leases.lut")
	mustRun(t, "compile", "--key", "ip", "--valid-from", "start", "--valid-to", "end", "--out", ll, leases)
	for _, c := range []struct{ at, want string }{
		{"2026-03-01T11:59:59Z", `{"ip":"10.1.2.3","start":"2026-03-01T08:00:00Z","end":"2026-03-01T12:00:00Z","user":"ann"}` + "\n" + `{"ip":"10.1.2.4","start":"","end":"1772366400","user":"carl"}` + "\n"},
		{"1772366400", `{"ip":"10.1.2.3","start":"2026-03-01T12:00:00Z","end":"","user":"bob"}` + "\n"},
	} {
		got, _, _ := run(t, "get", "--at", c.at, ll, "10.1.2.3", "10.1.2.4")
		if got != c.want {
			t.Errorf("lut get --at %s:\n got %s\nwant %s", c.at, got, c.want)
		}
	}
	for _, tc := range []struct{ table, format string }{{pl, "csv"}, {ll, "csv"}, {pl, "tsv"}} {
		mustRun(t, "verify", tc.table)
		exp := filepath.Join(dir, "export."+tc.format)
		mustRun(t, "export", "--format", tc.format, "-o", exp, tc.table)
		again := filepath.Join(dir, "again.lut")
		args := []string{"compile", "--out", again}
		if tc.table == pl {
			args = append(args, "--match", "range", "--range-columns", "from,to", "--overlap", "narrowest")
		} else {
			args = append(args, "--key", "ip", "--valid-from", "start", "--valid-to", "end")
		}
		mustRun(t, append(args, exp)...)
		if !bytes.Equal(readFile(t, tc.table), readFile(t, again)) {
			t.Errorf("%s: export (%s) then compile does not give the same bytes", tc.table, tc.format)
		}
	}
}
