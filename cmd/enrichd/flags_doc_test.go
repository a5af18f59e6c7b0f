package main

import (
	"bytes"
	"maps"
	"os"
	"regexp"
	"slices"
	"testing"
)

// TestFlagsReference: the flags table of docs/enrichd.md has a row for
// every flag enrichd --help lists, and names no other.
func TestFlagsReference(t *testing.T) {
	b, err := os.ReadFile("../../docs/enrichd.md")
	if err != nil {
		t.Fatal(err)
	}
	table := regexp.MustCompile("(?s)\n## Flags\n\n(.*?)\n\n").FindSubmatch(b)
	if table == nil {
		t.Fatal("no flags table in docs/enrichd.md")
	}
	doc := map[string]bool{}
	for _, row := range regexp.MustCompile(`(?m)^\| ([^|]*(?:\\\|[^|]*)*) \|`).FindAllSubmatch(table[1], -1) {
		for _, m := range regexp.MustCompile("`--([a-z-]+)").FindAllSubmatch(row[1], -1) {
			doc[string(m[1])] = true
		}
	}
	var help, stderr bytes.Buffer
	if code := run([]string{"--help"}, &help, &stderr); code != 0 {
		t.Fatalf("--help: exit %d: %s", code, stderr.String())
	}
	code := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\s+(?:-[a-z], )?--([a-z-]+)`).FindAllStringSubmatch(help.String(), -1) {
		code[m[1]] = true
	}
	if len(code) < 10 {
		t.Fatalf("only %d flags", len(code))
	}
	for _, f := range slices.Sorted(maps.Keys(code)) {
		if !doc[f] {
			t.Errorf("enrichd --help lists --%s, missing from the flags table of docs/enrichd.md", f)
		}
	}
	for _, f := range slices.Sorted(maps.Keys(doc)) {
		if !code[f] {
			t.Errorf("the flags table of docs/enrichd.md names --%s, which enrichd --help does not list", f)
		}
	}
}
