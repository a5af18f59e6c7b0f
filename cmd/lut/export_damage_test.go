package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lutkit/lutkit/format"
)

// TestExportDiffDamage flips every byte of a small table in turn: export
// and diff either fail as get and inspect fail on a damaged table (exit 2,
// the file named, "corrupt .lut table" or the header's magic or version
// refused) or, for a flip no row depends on, give the
// original's output. None may exit 0 with rows dropped or changed.
func TestExportDiffDamage(t *testing.T) {
	dir := t.TempDir()
	var csv strings.Builder
	csv.WriteString("id,name,score\n")
	for i := 1; i <= 50; i++ {
		fmt.Fprintf(&csv, "%d,name%d,%d\n", i, i, i*3)
	}
	good := filepath.Join(dir, "small.lut")
	mustRun(t, "compile", "--key", "id", "-o", good, writeFile(t, filepath.Join(dir, "small.csv"), csv.String()))
	wantExport := mustRun(t, "export", good)
	wantDiff := mustRun(t, "diff", good, good)
	if !strings.Contains(wantDiff, "0 added, 0 removed, 0 changed (50 rows -> 50 rows)") {
		t.Fatalf("diff of a table with itself: %q", wantDiff)
	}
	b, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.lut")
	check := func(i int, args []string, want string) (failed bool) {
		t.Helper()
		out, errs, code := run(t, args...)
		switch {
		case code == 2 && strings.Contains(errs, bad+": ") && (strings.Contains(errs, "corrupt .lut table") ||
			// A flip in the header's magic or version, as get and inspect
			// report it.
			strings.Contains(errs, "not a .lut table") || strings.Contains(errs, "unsupported .lut version")):
			return true
		case code == 0 && out == want:
			return false
		}
		t.Errorf("byte %d flipped: lut %s: exit %d, stderr %q, stdout:\n%s", i, strings.Join(args, " "), code, errs, out)
		return false
	}
	refused := 0
	for i := range b {
		d := bytes.Clone(b)
		d[i] ^= 1
		if err := os.WriteFile(bad, d, 0o644); err != nil {
			t.Fatal(err)
		}
		if check(i, []string{"export", bad}, wantExport) {
			refused++
		}
		check(i, []string{"diff", good, bad}, wantDiff)
		check(i, []string{"diff", bad, good}, wantDiff)
	}
	// Padding aside, every byte is covered by a checksum.
	if refused < len(b)*9/10 {
		t.Errorf("export refused %d of %d flipped bytes", refused, len(b))
	}
}

// TestExportDamageExitStatus runs the built command on a table with a
// flipped DATA byte: export and diff exit 2 and name the damage and the
// file, and export leaves no output file.
func TestExportDamageExitStatus(t *testing.T) {
	lut := lutBinary(t)
	dir := t.TempDir()
	good := filepath.Join(dir, "small.lut")
	mustRun(t, "compile", "--key", "id", "-o", good, writeFile(t, filepath.Join(dir, "small.csv"), "id,name\n1,a\n2,b\n3,c\n"))
	b, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := openLUT(good)
	if err != nil {
		t.Fatal(err)
	}
	var data format.Section
	for _, s := range tbl.Sections() {
		if s.Kind == format.SectionData {
			data = s
		}
	}
	tbl.Close()
	d := bytes.Clone(b)
	d[data.Off+data.Len/2] ^= 1
	bad := filepath.Join(dir, "bad.lut")
	if err := os.WriteFile(bad, d, 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.csv")
	for _, args := range [][]string{{"export", bad, "-o", out}, {"diff", good, bad}, {"diff", bad, good}} {
		var stderr bytes.Buffer
		cmd := exec.Command(lut, args...)
		cmd.Stderr = &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(stderr.String(), "lut: ") ||
			!strings.Contains(stderr.String(), bad+": corrupt .lut table: DATA section checksum mismatch") {
			t.Errorf("lut %s: %v, stderr %q", strings.Join(args, " "), err, stderr.String())
		}
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("export of a damaged table left %s: %v", out, err)
	}
}
