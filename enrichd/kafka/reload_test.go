package kafka

import (
	"encoding/json"
	"testing"

	"github.com/lutkit/lutkit/enrichd"
)

// TestKafkaExampleSameOnReload: the Kafka example read twice gives inputs
// and outputs of the same value, as a reload compares them (by their
// JSON), so that a SIGHUP with an unchanged file is not refused for a
// Kafka section; a changed setting is a change.
func TestKafkaExampleSameOnReload(t *testing.T) {
	load := func() *enrichd.Config {
		cfg, err := enrichd.LoadConfig("../../examples/enrichd-kafka.yaml")
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	js := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	a, b := load(), load()
	if js(a.Inputs) != js(b.Inputs) || js(a.Outputs) != js(b.Outputs) {
		t.Fatalf("the Kafka example read twice differs:\n%s\n%s", js(a.Inputs), js(b.Inputs))
	}
	b.Inputs[0].Settings.(*InputConfig).Group = "other"
	if js(a.Inputs) == js(b.Inputs) {
		t.Errorf("a changed group compares equal")
	}
}
