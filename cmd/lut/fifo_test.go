package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// runWithin is run, failing the test if lut has not returned after 10 s.
func runWithin(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		stdout, stderr, code = run(t, args...)
	}()
	select {
	case <-done:
		return stdout, stderr, code
	case <-time.After(10 * time.Second):
		t.Fatalf("lut %s: still running after 10 s", strings.Join(args, " "))
		return "", "", 0
	}
}

// TestFIFOInputRefused: a table or a manifest that is a named pipe (no
// writer) is refused at once, as a directory is, with "not a regular
// file" and its path, by every command that reads tables.
func TestFIFOInputRefused(t *testing.T) {
	dir := t.TempDir()
	src := writeFile(t, filepath.Join(dir, "s.csv"), "k,v\na,1\n")
	good := filepath.Join(dir, "good.lut")
	mustRun(t, "compile", "--key", "k", "--out", good, src)
	mkfifo := func(p string) string {
		t.Helper()
		if err := syscall.Mkfifo(p, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ff := mkfifo(filepath.Join(dir, "ff.lut"))
	fm := mkfifo(filepath.Join(dir, "ff.mmdb"))
	tdir := filepath.Join(dir, "fdir")
	if err := os.Mkdir(tdir, 0o755); err != nil {
		t.Fatal(err)
	}
	manifest := mkfifo(filepath.Join(tdir, "MANIFEST.json"))
	for _, c := range []struct {
		args []string
		path string
		code int
	}{
		{[]string{"get", ff, "a"}, ff, 2},
		{[]string{"inspect", ff}, ff, 2},
		{[]string{"verify", ff}, ff, 1},
		{[]string{"diff", ff, good}, ff, 2},
		{[]string{"diff", good, ff}, ff, 2},
		{[]string{"export", ff}, ff, 2},
		{[]string{"get", fm, "1.2.3.4"}, fm, 2},
		{[]string{"inspect", fm}, fm, 2},
		{[]string{"verify", fm}, fm, 1},
		{[]string{"verify", tdir}, manifest, 1},
		{[]string{"publish", tdir, filepath.Join(dir, "www")}, manifest, 1},
	} {
		_, stderr, code := runWithin(t, c.args...)
		want := c.path + ": not a regular file (a named pipe)"
		if c.args[0] == "verify" && c.args[1] == c.path {
			want = c.path + ": FAILED: not a regular file (a named pipe)"
		}
		if code != c.code || !strings.Contains(stderr, want) {
			t.Errorf("lut %s: exit %d, stderr %q; want exit %d and %q", strings.Join(c.args, " "), code, stderr, c.code, want)
		}
	}
}
