package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/lutkit/lutkit/internal/testfiles"
)

// TestDemo runs the whole demo, smaller, against lut and enrichd built
// from this checkout: what "make demo" does, so a change that breaks the
// main job breaks this test.
func TestDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("builds lut and enrichd and runs them")
	}
	root, err := testfiles.Root()
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	// Built as the other tests build them (no -trimpath, which would
	// compile every package once more), so that they share the cache.
	build := exec.Command("go", "build", "-o", bin+string(filepath.Separator), "./cmd/lut", "./cmd/enrichd")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	d := &demo{bin: bin, dir: filepath.Join(t.TempDir(), "demo"), customers: 5000, events: 1000, streamed: 8000, rate: 4000}
	if err := d.run(); err != nil {
		d.kill()
		log, _ := os.ReadFile(filepath.Join(d.dir, "enrichd.log"))
		t.Fatalf("step %d/%d (%s): %v\nenrichd's log:\n%s", d.cur, d.steps, d.curName, err, log)
	}
	out, err := readLines(d.path("enriched.json"))
	if err != nil || len(out) != d.sent || d.sent < d.events+d.streamed {
		t.Fatalf("%d lines written, %d events sent (%v)", len(out), d.sent, err)
	}
}
