package main

import (
	"net"
	"path/filepath"
	"strings"
	"testing"
)

// TestSendRefusedPrintsNoCount: lut sample events --send to a port where
// nothing listens fails with the dial's error alone, no "sent 0 events"
// before it.
func TestSendRefusedPrintsNoCount(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, errs, code := run(t, "sample", "events", "5", "--send", "tcp://"+addr)
	if code == 0 || strings.Contains(errs, "sent") || !strings.Contains(errs, "connection refused") {
		t.Errorf("exit %d, stderr %q", code, errs)
	}
}

// TestPublishSaysPublishedOnce: lut publish to a directory prints its
// "published" line once, on stdout, after the lines of the artifacts.
func TestPublishSaysPublishedOnce(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "small.csv"), "id,name\n1,a\n")
	cfg := writeFile(t, filepath.Join(dir, "tables.yaml"), "version: 1\ntables:\n  - name: small\n    key: id\n    sources: [small.csv]\n")
	dist, www := filepath.Join(dir, "dist"), filepath.Join(dir, "www")
	mustRun(t, "build", cfg, "--out", dist, "--progress", "never")
	out, errs, code := run(t, "publish", dist, www, "--progress", "never")
	if code != 0 || strings.Count(out+errs, "published") != 1 || !strings.Contains(out, filepath.Join(www, "MANIFEST.json")+": published (1 artifacts uploaded, 0 already there)") ||
		!strings.Contains(errs, ".lut: uploaded (") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errs)
	}
}

// TestOutputInMissingDirectory: an output in a directory that does not
// exist is named as given, not by its temporary file.
func TestOutputInMissingDirectory(t *testing.T) {
	dir := t.TempDir()
	csv := writeFile(t, filepath.Join(dir, "small.csv"), "id,net\n1,10.0.0.0/8\n")
	table := filepath.Join(dir, "t.lut")
	mustRun(t, "compile", "--key", "id", "-o", table, csv)
	missing := filepath.Join(dir, "missing")
	for _, c := range []struct {
		args []string
		out  string
	}{
		{[]string{"compile", "--key", "id", "-o", filepath.Join(missing, "o.lut"), csv}, filepath.Join(missing, "o.lut")},
		{[]string{"compile", "--network", "net", "-o", filepath.Join(missing, "o.mmdb"), csv}, filepath.Join(missing, "o.mmdb")},
		{[]string{"export", table, "-o", filepath.Join(missing, "o.csv")}, filepath.Join(missing, "o.csv")},
	} {
		_, errs, code := run(t, c.args...)
		if code != 2 || !strings.Contains(errs, "create "+c.out+": no such file or directory") || strings.Contains(errs, ".tmp-") {
			t.Errorf("lut %s: exit %d, stderr %q", strings.Join(c.args, " "), code, errs)
		}
	}
}

// TestExportUnknownFormat: an unknown --format is a usage error that
// lists the formats.
func TestExportUnknownFormat(t *testing.T) {
	dir := t.TempDir()
	table := filepath.Join(dir, "t.lut")
	mustRun(t, "compile", "--key", "id", "-o", table, writeFile(t, filepath.Join(dir, "small.csv"), "id,name\n1,a\n"))
	_, errs, code := run(t, "export", table, "--format", "xml")
	if want := `export: unknown --format "xml" (want csv, tsv, jsonl or parquet)`; code != 2 || errs != want {
		t.Errorf("exit %d, stderr %q, want %q", code, errs, want)
	}
}
