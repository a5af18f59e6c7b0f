package kafka

import (
	"strings"
	"testing"

	"github.com/lutkit/lutkit/enrichd"
)

// TestExactlyOnceConfig: pipeline.delivery: exactly_once is refused,
// at the file, line and column of the setting, where it cannot hold.
func TestExactlyOnceConfig(t *testing.T) {
	f := func(yml, want string) {
		t.Helper()
		_, err := enrichd.ParseConfig("e.yaml", []byte(yml))
		if want == "" {
			if err != nil {
				t.Errorf("%s: %v", yml, err)
			}
			return
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v, want it to contain %q", err, want)
		}
	}
	kin := "inputs:\n  - {type: kafka, kafka: {brokers: [k:1], topics: [a], group: g}}\n"
	kout := "outputs:\n  - {type: kafka, kafka: {brokers: [k:1], topic: t%s}}\n"
	eos := "pipeline:\n  delivery: exactly_once\n"
	f(kin+strings.ReplaceAll(kout, "%s", "")+eos, "")
	f(kin+strings.ReplaceAll(kout, "%s", ", transactional_id: x, transaction_timeout: 5s")+eos, "")
	f(kin+strings.ReplaceAll(kout, "%s", "")+"pipeline: {delivery: twice}\n", "e.yaml:5:22: pipeline.delivery: must be one of at_least_once, exactly_once")
	f(kin+"outputs:\n  - {type: stdout}\n"+eos, "e.yaml:4:12: outputs[0].type: a stdout output cannot take part in pipeline.delivery: exactly_once (only kafka)")
	f("inputs:\n  - {type: tcp, listen: \"127.0.0.1:1\"}\n"+strings.ReplaceAll(kout, "%s", "")+eos, "e.yaml:2:12: inputs[0].type: a tcp input cannot take part")
	f(kin+"outputs:\n  - {type: kafka, kafka: {brokers: [k:1], topic: t}}\n  - {type: kafka, kafka: {brokers: [k:1], topic: u}}\n"+eos,
		"e.yaml:7:13: pipeline.delivery: exactly_once needs one input and one output (1 inputs and 2 outputs here)")
	f(kin+strings.ReplaceAll(kout, "%s", ", dead_letter: /tmp/dl")+eos, "outputs[0].kafka.dead_letter: not with pipeline.delivery: exactly_once")
	f(kin+strings.ReplaceAll(kout, "%s", ", required_acks: one")+eos, "outputs[0].kafka.required_acks: must be all with pipeline.delivery: exactly_once")
	f(kin+strings.ReplaceAll(kout, "%s", ", transaction_timeout: 10ms")+eos, "outputs[0].kafka.transaction_timeout: must be 1s or more")
	f(kin+strings.ReplaceAll(kout, "%s", "")+eos+"queue: {type: disk, path: /tmp/q}\n", "e.yaml:7:15: queue.type: a persistent queue cannot be used with pipeline.delivery: exactly_once")
	f(kin+strings.ReplaceAll(kout, "%s", ", transactional_id: x"), "e.yaml:4:71: outputs[0].kafka.transactional_id: applies to pipeline.delivery: exactly_once only")
}
