package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/lutkit/lutkit/tables"
)

// TestBuildForceKeepsDelta: lut build --force over a set whose table
// comes out with the same bytes lists the table as before, with its
// build time and delta, and leaves the output directory as it was;
// lut verify and lut publish accept it.
func TestBuildForceKeepsDelta(t *testing.T) {
	bin := lutBinary(t)
	t.Setenv("SOURCE_DATE_EPOCH", "") // the build time is the clock's
	dir := t.TempDir()
	csv := func(v int) {
		var b strings.Builder
		b.WriteString("id,email\n")
		for i := range 3000 {
			e := fmt.Sprintf("user%d@example.com", i)
			if i == v*10 {
				e = fmt.Sprintf("v%d.%s", v, e)
			}
			fmt.Fprintf(&b, "%d,%s\n", i, e)
		}
		writeFile(t, filepath.Join(dir, "c.csv"), b.String())
	}
	cfg := writeFile(t, filepath.Join(dir, "tables.yaml"), "version: 1\ntables:\n  - {name: c, sources: [c.csv], key: id}\n")
	dist := filepath.Join(dir, "dist")
	lut := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(bin, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("lut %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	csv(0)
	lut("build", cfg, "--out", dist, "--delta")
	csv(1)
	lut("build", cfg, "--out", dist, "--delta")
	before := readTables(t, dist)
	if before[0].Delta == nil {
		t.Fatalf("the second build wrote no delta: %+v", before[0])
	}
	files := dirNames(t, dist)
	// A rebuild in a later second would record a later build time.
	time.Sleep(time.Until(before[0].BuildTime.Add(time.Second)))
	out := lut("build", cfg, "--out", dist, "--delta", "--force")
	if !regexp.MustCompile(`(?m)^delta +c +` + regexp.QuoteMeta(before[0].Delta.File) + ` .*chain 1\)$`).MatchString(out) {
		t.Errorf("lut build --force does not name the delta kept:\n%s", out)
	}
	after := readTables(t, dist)
	b, _ := json.Marshal(before)
	a, _ := json.Marshal(after)
	if string(a) != string(b) {
		t.Errorf("lut build --force changed the manifest's tables:\nbefore %s\nafter  %s", b, a)
	}
	if got := dirNames(t, dist); got != files {
		t.Errorf("lut build --force changed the directory: %s, was %s", got, files)
	}
	lut("verify", dist)
	store := filepath.Join(dir, "store")
	lut("publish", dist, store)
	if _, err := os.Stat(filepath.Join(store, before[0].Delta.File)); err != nil {
		t.Errorf("the delta was not published: %v", err)
	}
}

// readTables returns the tables the manifest of dir lists.
func readTables(t *testing.T, dir string) []tables.ManifestTable {
	t.Helper()
	m, err := tables.ReadManifest(filepath.Join(dir, tables.ManifestName))
	if err != nil {
		t.Fatal(err)
	}
	return m.Tables
}

// dirNames returns the names of the files in dir, space-separated.
func dirNames(t *testing.T, dir string) string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return strings.Join(names, " ")
}
