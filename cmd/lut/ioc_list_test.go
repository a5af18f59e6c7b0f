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
