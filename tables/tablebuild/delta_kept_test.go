package tablebuild

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/lutkit/lutkit/tables"
)

// TestUnchangedTableLosesMissingDelta: a table kept unchanged whose
// delta file is no longer in the output directory is listed without it,
// so that lut verify and lut publish accept the directory; its delta is
// listed again while the file is there.
func TestUnchangedTableLosesMissingDelta(t *testing.T) {
	src, out := t.TempDir(), filepath.Join(t.TempDir(), "dist")
	buildCustomersVersion(t, src, out, 0, 0)
	e := buildCustomersVersion(t, src, out, 1, 0)
	if e.Delta == nil {
		t.Fatal("version 1 has no delta")
	}
	if again := buildCustomersVersion(t, src, out, 1, 0); again.Delta == nil || *again.Delta != *e.Delta {
		t.Fatalf("unchanged, the delta is %+v, was %+v", again.Delta, e.Delta)
	}
	if err := os.Remove(filepath.Join(out, e.Delta.File)); err != nil {
		t.Fatal(err)
	}
	again := buildCustomersVersion(t, src, out, 1, 0)
	if again.Delta != nil || again.SHA256 != e.SHA256 {
		t.Fatalf("unchanged without its delta file: %+v", again)
	}
	if _, err := tables.VerifyDir(out); err != nil {
		t.Fatal(err)
	}
}
