package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestMMDBFromLUTRefused: a .lut table given as a source of an .mmdb
// (a CSV SOURCE, --ioc or --base) is named as the .lut table it is, with
// what to do, exit status 2, and no file is written; not read as a CSV
// file or list of binary text, a bad row at line 1.
func TestMMDBFromLUTRefused(t *testing.T) {
	dir := t.TempDir()
	csv := writeFile(t, filepath.Join(dir, "sites.csv"), "network,site\n10.0.0.0/8,hq\n")
	lut := filepath.Join(dir, "sites.lut")
	mustRun(t, "compile", "--key", "network", "--out", lut, csv)
	out := filepath.Join(dir, "sites.mmdb")
	for _, c := range []struct {
		args []string
		what string
	}{
		{[]string{"--network", "network", lut}, "a CSV file of networks or ranges"},
		{[]string{"--ioc", lut}, "an address list"},
		{[]string{"--base", lut}, "a MaxMind DB (.mmdb)"},
	} {
		_, stderr, code := run(t, append([]string{"compile", "--out", out}, c.args...)...)
		want := lut + " is a .lut table, not " + c.what + ": an .mmdb is compiled from CSV files, address lists and .mmdb files " +
			"(lut export " + lut + " writes the table's rows as CSV)"
		if code != 2 || stderr != want {
			t.Errorf("%v: exit %d, %q; want 2 and %q", c.args, code, stderr, want)
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Fatalf("%v: a failed compile left %s", c.args, out)
		}
	}
}
