package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPublishCommand: lut build, then lut publish to a directory twice
// (the second skips every artifact); a directory that does not verify
// publishes nothing and exits 1.
func TestPublishCommand(t *testing.T) {
	dist := filepath.Join(t.TempDir(), "dist")
	mustRun(t, "build", "../../examples/tables.yaml", "--out", dist)
	dest := filepath.Join(t.TempDir(), "www")
	out := mustRun(t, "publish", "-q", dist, "file://"+dest)
	if !strings.Contains(out, "published (3 artifacts uploaded, 0 already there)") {
		t.Fatalf("first publish: %q", out)
	}
	out = mustRun(t, "publish", "-q", dist, dest)
	if !strings.Contains(out, "published (0 artifacts uploaded, 3 already there)") {
		t.Fatalf("second publish: %q", out)
	}
	mustRun(t, "verify", dest)

	bad := t.TempDir()
	if err := os.WriteFile(filepath.Join(bad, "MANIFEST.json"), []byte("not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, errs, code := run(t, "publish", bad, filepath.Join(t.TempDir(), "x"))
	if code != 1 || !strings.Contains(errs, "does not verify, nothing published") {
		t.Fatalf("publishing a bad directory: exit %d: %s", code, errs)
	}
	_, errs, code = run(t, "publish", dist)
	if code != 2 {
		t.Fatalf("one argument: exit %d: %s", code, errs)
	}
}
