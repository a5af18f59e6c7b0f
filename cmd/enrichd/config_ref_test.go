package main

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/lutkit/lutkit/enrichd"
)

// TestConfigReference: docs/config.md lists every key the decoder
// knows, with every input and output type enrichd links (Kafka
// included), and no other.
func TestConfigReference(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "config.md"))
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `([^`]+)` \\|")
	doc := map[string]bool{}
	for _, m := range row.FindAllStringSubmatch(string(b), -1) {
		if doc[m[1]] {
			t.Errorf("docs/config.md lists %s twice", m[1])
		}
		doc[m[1]] = true
	}
	code := enrichd.ConfigKeys()
	if len(code) < 100 {
		t.Fatalf("only %d keys found in the schema", len(code))
	}
	for _, k := range code {
		if !doc[k] {
			t.Errorf("%s is a key of the configuration, missing from docs/config.md", k)
		}
		delete(doc, k)
	}
	for k := range doc {
		t.Errorf("docs/config.md lists %s, which is not a key of the configuration", k)
	}
}
