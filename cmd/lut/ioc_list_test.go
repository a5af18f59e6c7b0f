package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestIOCListLongLine: an --ioc list with a line longer than 1 MiB (a
// file that is not a list, such as a JSON document on one line) fails at
// that line with what a list holds, exit status 1, not with the name of
// the Go scanner that gave up.
func TestIOCListLongLine(t *testing.T) {
	dir := t.TempDir()
	list := writeFile(t, filepath.Join(dir, "feed.txt"), "10.0.0.1\n"+`{"ips":["`+strings.Repeat("10.0.0.2", 200_000)+"\"]}\n")
	out := filepath.Join(dir, "ioc.mmdb")
	_, stderr, code := run(t, "compile", "--out", out, "--ioc", list)
	want := list + ":2: a line longer than 1 MiB: a list holds one address, CIDR or range per line (is this the right file?)"
	if code != 1 || stderr != want {
		t.Fatalf("exit %d, %q; want 1 and %q", code, stderr, want)
	}
}

// TestIOCListSpacedRange: a range written with spaces around its dash
// ("10.0.0.1 - 10.0.0.9") is the whole range, not its start alone; words
// after a dash that are not an address stay a comment; a bad spaced range
// fails at its line and column.
func TestIOCListSpacedRange(t *testing.T) {
	dir := t.TempDir()
	list := writeFile(t, filepath.Join(dir, "feed.txt"),
		"10.0.0.1 - 10.0.0.9  # spaced\n10.2.0.1 -10.2.0.3\n  10.3.0.1- 10.3.0.3\n10.4.0.1 - edge router\n2001:db8::1 - 2001:db8::ff\n")
	out := filepath.Join(dir, "ioc.mmdb")
	if _, stderr, code := run(t, "compile", "--out", out, "--ioc", list); code != 0 || !strings.Contains(stderr, list+": 5 rows,") {
		t.Fatalf("compile: exit %d\n%s", code, stderr)
	}
	for addr, network := range map[string]string{
		"10.0.0.1": "10.0.0.1/32", "10.0.0.5": "10.0.0.4/30", "10.0.0.9": "10.0.0.8/31",
		"10.2.0.3": "10.2.0.2/31", "10.3.0.3": "10.3.0.2/31", "10.4.0.1": "10.4.0.1/32", "2001:db8::80": "2001:db8::80/121",
	} {
		stdout, stderr, code := run(t, "get", out, addr)
		if code != 0 || !strings.Contains(stdout, `"network":"`+network+`"`) {
			t.Errorf("get %s: exit %d, %s%s; want network %s", addr, code, stdout, stderr, network)
		}
	}
	for _, addr := range []string{"10.0.0.10", "10.4.0.2"} {
		if _, _, code := run(t, "get", out, addr); code != 1 {
			t.Errorf("get %s: exit %d, want 1 (not found)", addr, code)
		}
	}
	bad := writeFile(t, filepath.Join(dir, "bad.txt"), "10.0.0.1\n  10.5.0.9 - 10.5.0.1\n")
	_, stderr, code := run(t, "compile", "--out", out, "--ioc", bad)
	if want := bad + ":2:3: range end 10.5.0.1 is before the start 10.5.0.9"; code != 1 || stderr != want {
		t.Errorf("bad range: exit %d, %q; want 1 and %q", code, stderr, want)
	}
}
