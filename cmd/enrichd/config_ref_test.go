package main

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/lutkit/lutkit/enrichd"
	"github.com/lutkit/lutkit/internal/config"
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

// TestConfigReferenceKafkaDefaults: the default docs/config.md gives
// each key of a Kafka input's and output's kafka block is the value the
// configuration takes when the key is not given: enrichd's own, not left
// to the client library.
func TestConfigReferenceKafkaDefaults(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "config.md"))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := enrichd.ParseConfig("e.yaml", []byte(`
inputs:
  - {type: kafka, kafka: {brokers: ["127.0.0.1:9092"], topics: [t], group: g}}
outputs:
  - {type: kafka, kafka: {brokers: ["127.0.0.1:9092"], topic: u, dead_letter: /var/lib/enrichd/dead.jsonl}}
`))
	if err != nil {
		t.Fatal(err)
	}
	blocks := map[string]reflect.Value{
		"inputs":  reflect.ValueOf(cfg.Inputs[0].Settings).Elem(),
		"outputs": reflect.ValueOf(cfg.Outputs[0].Settings).Elem(),
	}
	row := regexp.MustCompile("(?m)^\\| `(inputs|outputs)\\[\\]\\.kafka\\.([a-z_]+)` \\| [^|]* \\| ([^|]*) \\|")
	checked := 0
	for _, m := range row.FindAllStringSubmatch(string(b), -1) {
		key, doc := m[1]+"[].kafka."+m[2], strings.TrimSpace(m[3])
		if doc == "" || doc == "required" {
			continue
		}
		name := ""
		for _, w := range strings.Split(m[2], "_") {
			if w == "id" {
				name += "ID"
			} else {
				name += strings.ToUpper(w[:1]) + w[1:]
			}
		}
		f := blocks[m[1]].FieldByName(name)
		if !f.IsValid() {
			t.Errorf("%s: no field %s in the configuration", key, name)
			continue
		}
		checked++
		var ok bool
		switch v := f.Interface().(type) {
		case time.Duration:
			d, err := time.ParseDuration(doc)
			ok = err == nil && d == v
		case int:
			n, err := config.ParseSize(doc)
			ok = err == nil && n == v
		default:
			ok = fmt.Sprint(v) == doc
		}
		if !ok {
			t.Errorf("docs/config.md gives %s the default %s; the configuration's is %v", key, doc, f.Interface())
		}
	}
	if checked < 20 {
		t.Errorf("only %d defaults checked", checked)
	}
}
