package main

import (
	"encoding/json"
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

// TestEmptyManifestRefused: a manifest that lists no tables (which lut
// build never writes) fails lut verify and is not published: nodes would
// swap it in and miss every lookup.
func TestEmptyManifestRefused(t *testing.T) {
	dist := filepath.Join(t.TempDir(), "dist")
	mustRun(t, "build", "../../examples/tables.yaml", "--out", dist)
	mp := filepath.Join(dist, "MANIFEST.json")
	b, err := os.ReadFile(mp)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	m["tables"] = []any{}
	if b, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(mp, b, 0o644); err != nil {
		t.Fatal(err)
	}
	want := mp + ": lists no tables: a node that loaded it would serve none and miss every lookup"
	out, errs, code := run(t, "verify", dist)
	if code != 1 || !strings.Contains(errs, dist+": FAILED: "+want) || strings.Contains(out, "ok") {
		t.Errorf("verify: exit %d: %s%s", code, out, errs)
	}
	dest := filepath.Join(t.TempDir(), "www")
	out, errs, code = run(t, "publish", "-q", dist, dest)
	if code != 1 || !strings.Contains(errs, "does not verify, nothing published: "+want) {
		t.Errorf("publish: exit %d: %s%s", code, out, errs)
	}
	if _, err := os.Stat(filepath.Join(dest, "MANIFEST.json")); !os.IsNotExist(err) {
		t.Errorf("a manifest was published: %v", err)
	}
}
