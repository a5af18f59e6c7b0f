package tablebuild

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lutkit/lutkit/tables"
)

// TestVerifyNamesMissingDelta: a manifest naming a delta file that is
// not in the directory fails lut verify naming the delta, not as if the
// table's artifact, which is there, could not be opened.
func TestVerifyNamesMissingDelta(t *testing.T) {
	src, out := t.TempDir(), filepath.Join(t.TempDir(), "dist")
	buildCustomersVersion(t, src, out, 0, 0)
	e := buildCustomersVersion(t, src, out, 1, 0)
	if e.Delta == nil {
		t.Fatal("version 1 has no delta")
	}
	if err := os.Remove(filepath.Join(out, e.Delta.File)); err != nil {
		t.Fatal(err)
	}
	_, err := tables.VerifyDir(out)
	if err == nil || !strings.Contains(err.Error(), "delta "+e.Delta.File+": open: no such file or directory") {
		t.Fatalf("VerifyDir: %v", err)
	}
}
