package main

import (
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestMetricsReference: docs/enrichd.md names, in full, every metric
// enrichd exports (those the code of enrichd/ declares: with MetricDesc,
// which prefixes "enrichd_", or as the Name of a Prometheus collector),
// and no enrichd_ metric the code does not export.
func TestMetricsReference(t *testing.T) {
	desc := regexp.MustCompile(`MetricDesc\("([a-z0-9_]+)"`)
	named := regexp.MustCompile(`Name:\s*"(enrichd_[a-z0-9_]+)"`)
	code := map[string]bool{}
	err := filepath.WalkDir("../../enrichd", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "testdata" {
			return filepath.SkipDir
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range desc.FindAllStringSubmatch(string(b), -1) {
			code["enrichd_"+m[1]] = true
		}
		for _, m := range named.FindAllStringSubmatch(string(b), -1) {
			code[m[1]] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(code) < 80 {
		t.Fatalf("only %d metrics found in the code", len(code))
	}
	b, err := os.ReadFile("../../docs/enrichd.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := map[string]bool{}
	for _, m := range regexp.MustCompile(`enrichd_[a-z0-9_]*[a-z0-9]`).FindAllString(string(b), -1) {
		doc[m] = true
	}
	for _, m := range slices.Sorted(maps.Keys(code)) {
		if !doc[m] {
			t.Errorf("enrichd exports %s, which docs/enrichd.md does not name", m)
		}
	}
	for _, m := range slices.Sorted(maps.Keys(doc)) {
		if !code[m] {
			t.Errorf("docs/enrichd.md names %s, which enrichd does not export", m)
		}
	}
}
