package enrichd

import (
	"regexp"
	"slices"

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
  - {on_miss: {}, when: {}}
outputs:
  - {type: kafka, kafka: {tls: {}, sasl: {}, create_topic: {}}}
  - {type: relp, tls: {}}
pipeline: {}
http: {tls: {}, limits: {}}
memcached: {tls: {}, limits: {}}
log: {}
shutdown: {}
queue: {}
`

// ConfigKeys returns every key path the configuration's decoder knows
// for the input and output types registered (a program that links the
// Kafka package has its keys too), with list elements written as []
// (inputs[].listen). docs/config.md is checked against it.
func ConfigKeys() []string {
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
