package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestVerifyFailedNamesFileOnce: the FAILED line of a file lut verify
// cannot open as a table names the file once, at the start, as it does
// for damage found while verifying.
func TestVerifyFailedNamesFileOnce(t *testing.T) {
	dir := t.TempDir()
	csv := writeFile(t, filepath.Join(dir, "t.csv"), "id,v\n1,a\n2,b\n")
	good := filepath.Join(dir, "t.lut")
	mustRun(t, "compile", "--key", "id", "--out", good, csv)
	b, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	cut := writeFile(t, filepath.Join(dir, "cut.lut"), string(b[:40]))
	junk := writeFile(t, filepath.Join(dir, "junk.lut"), "id,v\n1,a\n")
	stdout, stderr, code := run(t, "verify", good, cut, junk)
	want := cut + ": FAILED: corrupt .lut table: file truncated: 40 bytes is shorter than a header and footer at offset 0x28\n" +
		junk + ": FAILED: not a .lut table (bad magic)\n"
	if code != 1 || stderr != want || !strings.HasPrefix(stdout, good+": ok") {
		t.Fatalf("exit %d, stdout %q, stderr\n%s\nwant\n%s", code, stdout, stderr, want)
	}
}
