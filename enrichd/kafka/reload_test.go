package kafka

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/lutkit/lutkit/enrichd"
	"github.com/lutkit/lutkit/internal/kafkatest"
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

// TestKafkaInputReload: a reload that changes the Kafka input (its
// commit_interval) while events stream makes the new input, which joins
// the group, then drains the old one and closes it once the output has
// delivered what it read (its last commit): every event arrives, at least
// once, the group ends with nothing uncommitted, and events_out_total is
// what the output topic holds.
func TestKafkaInputReload(t *testing.T) {
	const n, rows = 20_000, 1000
	c := kafkatest.Start(t, 1, 4, "in", "out")
	dir := t.TempDir()
	r := startDaemon(t, kafkaConfig(t, dir, c, rows, ", commit_interval: 50ms", ""))
	c.Produce(t, "in", 0, n/2, func(i int) []byte { return kafkatest.Event(i, rows) })
	if got := waitMetric(t, r.d, `enrichd_events_out_total`, n/4); got < n/4 {
		t.Fatalf("%v events out before the reload", got)
	}
	next := kafkaConfig(t, dir, c, rows, ", commit_interval: 60ms", "")
	if err := r.d.Reload(func() (*enrichd.Config, error) { return next, nil }); err != nil {
		t.Fatal(err)
	}
	if got := metric(t, r.d, `enrichd_config_reload_inputs_total{action="stopped"}`); got != 1 {
		t.Errorf("inputs stopped counted %v, want 1", got)
	}
	c.Produce(t, "in", n/2, n, func(i int) []byte { return kafkatest.Event(i, rows) })
	for deadline := time.Now().Add(time.Minute); c.Lag(t, "enrichd", "in") != 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the group still lags by %d", c.Lag(t, "enrichd", "in"))
		}
	}
	// Every offset is committed, so every event fetched is delivered.
	out := metric(t, r.d, `enrichd_events_out_total`)
	r.stop(t)
	ty := kafkatest.NewTally(customerID)
	c.ReadAll(t, "out", time.Minute, func(v []byte) { ty.Add(v) })
	if out != float64(ty.Total) {
		t.Errorf("events_out_total %v, but the output topic holds %d events", out, ty.Total)
	}
	if len(ty.Bad) > 0 {
		t.Fatalf("%d bad events, first: %s", len(ty.Bad), ty.Bad[0])
	}
	if miss := ty.Missing(n); len(miss) > 0 {
		t.Fatalf("%d events missing (first %v)", len(miss), miss[:min(5, len(miss))])
	}
	if lag := c.Lag(t, "enrichd", "in"); lag != 0 {
		t.Errorf("after shutdown the group has %d uncommitted events, want 0", lag)
	}
	t.Logf("%d events, %d read twice", n, ty.Dups)
}

// TestKafkaExactlyOnceInputReloadRefused: with pipeline.delivery:
// exactly_once, a reload that changes the input is refused, saying why.
func TestKafkaExactlyOnceInputReloadRefused(t *testing.T) {
	c := kafkatest.Start(t, 1, 2, "in", "out")
	dir := t.TempDir()
	cfg := kafkaConfig(t, dir, c, 10, "", "")
	cfg.Pipeline.Delivery = enrichd.ExactlyOnce
	r := startDaemon(t, cfg)
	next := kafkaConfig(t, dir, c, 10, ", commit_interval: 60ms", "")
	next.Pipeline.Delivery = enrichd.ExactlyOnce
	err := r.d.Reload(func() (*enrichd.Config, error) { return next, nil })
	if err == nil || !strings.Contains(err.Error(), "inputs changed with pipeline.delivery: exactly_once") {
		t.Fatalf("reload: %v, want the input change refused", err)
	}
}
