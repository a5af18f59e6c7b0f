package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestFlagsThatDoNotApply: a flag given where it does not apply is a usage
// error (exit 2) naming the flag and what it applies to, and nothing is
// written; the same command without it runs.
func TestFlagsThatDoNotApply(t *testing.T) {
	dir := t.TempDir()
	csv := writeFile(t, filepath.Join(dir, "small.csv"), "id,name\n1,a\n2,b\n")
	nets := writeFile(t, filepath.Join(dir, "nets.csv"), "network,name\n10.0.0.0/8,x\n")
	lut := filepath.Join(dir, "o.lut")
	mmdb := filepath.Join(dir, "n.mmdb")
	mustRun(t, "compile", "--network", "network", "-o", mmdb, nets)
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"compile", "--key", "id", "--ioc", filepath.Join(dir, "missing.txt"), "--record-size", "99", "--profile", "city", "--network", "id", "-o", lut, csv}, []string{
			"compile: --ioc applies to .mmdb output only; " + lut + " is a .lut table (name the output .mmdb, or give --mmdb)",
			"compile: --network applies to .mmdb output only",
			"compile: --profile applies to .mmdb output only",
			"compile: --record-size applies to .mmdb output only",
		}},
		{[]string{"compile", "--mmdb", "--key", "id", "--fold-case", "--match", "exact", "-o", lut, nets}, []string{
			"compile: --fold-case applies to .lut output only; " + lut + " is written as an MMDB file",
			"compile: --match applies to .lut output only",
		}},
		{[]string{"compile", "--key", "id", "--sqlite-table", "assets", "-o", lut, csv}, []string{
			"compile: --sqlite-table: applies to SQLite sources only; " + csv + " is read as CSV",
		}},
		{[]string{"compile", "--key", "id", "--format", "csv", "--sqlite-query", "SELECT 1", "-o", lut, csv}, []string{
			"compile: --sqlite-query: applies to SQLite sources only; " + csv + " is read as CSV",
		}},
		{[]string{"get", mmdb, "--at", "garbage", "10.1.1.1"}, []string{
			"get: --at applies to .lut tables only; " + mmdb + " is a MaxMind DB",
		}},
		{[]string{"get", mmdb, "--max-matches", "3", "10.1.1.1"}, []string{
			"get: --max-matches applies to .lut tables only; " + mmdb + " is a MaxMind DB",
		}},
		{[]string{"get", mmdb, "--sep", "/", "10.1.1.1"}, []string{
			"get: --sep applies to .lut tables only",
		}},
	} {
		out, errs, code := run(t, c.args...)
		if code != 2 || out != "" {
			t.Errorf("lut %s: exit %d, stdout %q, stderr %q", strings.Join(c.args, " "), code, out, errs)
		}
		for _, w := range c.want {
			if !strings.Contains(errs, w) {
				t.Errorf("lut %s: stderr %q lacks %q", strings.Join(c.args, " "), errs, w)
			}
		}
		if _, err := os.Stat(lut); !os.IsNotExist(err) {
			t.Fatalf("lut %s wrote %s: %v", strings.Join(c.args, " "), lut, err)
		}
	}
	// Without them, the same commands run.
	mustRun(t, "compile", "--key", "id", "-o", lut, csv)
	if out := mustRun(t, "get", mmdb, "10.1.1.1"); !strings.Contains(out, `"network":"10.0.0.0/8"`) {
		t.Errorf("get of an .mmdb: %q", out)
	}
}

// TestFlagsThatDoNotApplyExitStatus runs the built command: an MMDB flag
// for a .lut output exits 2 with the message on stderr.
func TestFlagsThatDoNotApplyExitStatus(t *testing.T) {
	bin := lutBinary(t)
	dir := t.TempDir()
	csv := writeFile(t, filepath.Join(dir, "small.csv"), "id,name\n1,a\n")
	var stderr bytes.Buffer
	cmd := exec.Command(bin, "compile", "--key", "id", "--record-size", "24", "-o", filepath.Join(dir, "o.lut"), csv)
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.HasPrefix(stderr.String(), "lut: compile: --record-size applies to .mmdb output only") {
		t.Errorf("exit %v, stderr %q", err, stderr.String())
	}
}
