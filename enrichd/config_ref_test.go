package enrichd

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"github.com/lutkit/lutkit/internal/config"
)

// everySection is a configuration that opens every mapping of the
// schema, so that decoding it meets every key (its values need not be
// valid).
const everySection = `
inputs:
  - {type: tcp, tls: {}, limits: {}}
  - {type: kafka, kafka: {tls: {}, sasl: {}}}
tables: {headers: {}}
rules:
  - {on_miss: {}}
outputs:
  - {type: kafka, kafka: {tls: {}, sasl: {}, create_topic: {}}}
pipeline: {}
http: {tls: {}, limits: {}}
memcached: {tls: {}, limits: {}}
log: {}
shutdown: {}
`

// schemaKeys returns every key path the configuration's decoder knows,
// with list elements written as [] (inputs[].listen).
func schemaKeys(t *testing.T) []string {
	t.Helper()
	idx := regexp.MustCompile(`\[\d+\]`)
	seen := map[string]bool{}
	d := &config.Decoder{File: "every.yaml", OnKeys: func(field string, keys config.Keys) {
		for k := range keys {
			seen[idx.ReplaceAllString(config.Field(field, k), "[]")] = true
		}
	}}
	decodeConfig(d, []byte(everySection))
	var out []string
	for k := range seen {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestConfigReference: docs/config.md lists every key the decoder
// knows, and no other.
func TestConfigReference(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "docs", "config.md"))
	must(t, err)
	row := regexp.MustCompile("(?m)^\\| `([^`]+)` \\|")
	doc := map[string]bool{}
	for _, m := range row.FindAllStringSubmatch(string(b), -1) {
		if doc[m[1]] {
			t.Errorf("docs/config.md lists %s twice", m[1])
		}
		doc[m[1]] = true
	}
	code := schemaKeys(t)
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
