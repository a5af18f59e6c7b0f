package enrichd

import (
	"strings"
	"testing"
)

// TestConfigListeners: two listeners on one address are refused at the
// second one's position, where they used to pass --check-config and fail
// the start with "address already in use"; tcp and udp may share a port,
// and port 0 is a free port each.
func TestConfigListeners(t *testing.T) {
	const out = "outputs: [{type: stdout}]\n"
	for _, c := range []struct{ yml, want string }{
		{"inputs:\n  - {name: a, type: tcp, listen: \"127.0.0.1:5514\"}\n  - {name: b, type: relp, listen: \"127.0.0.1:5514\"}\n" + out,
			"e.yaml:3:35: inputs[1].listen: tcp 127.0.0.1:5514 overlaps 127.0.0.1:5514 of inputs[0] (a): two listeners cannot share an address"},
		{"inputs:\n  - {name: a, type: tcp, listen: \"127.0.0.1:5514\"}\n  - {name: b, type: tcp, listen: \":5514\"}\n" + out,
			"e.yaml:3:34: inputs[1].listen: tcp :5514 overlaps 127.0.0.1:5514 of inputs[0] (a)"},
		{"inputs:\n  - {name: a, type: udp, listen: \"0.0.0.0:514\"}\n  - {name: b, type: udp, listen: \"10.0.0.1:514\"}\n" + out,
			"inputs[1].listen: udp 10.0.0.1:514 overlaps 0.0.0.0:514 of inputs[0] (a)"},
		{"inputs:\n  - {name: a, type: tcp, listen: \"127.0.0.1:8080\"}\n" + out + "http: {listen: \"127.0.0.1:8080\"}\n",
			"e.yaml:4:16: http.listen: tcp 127.0.0.1:8080 overlaps 127.0.0.1:8080 of inputs[0] (a)"},
	} {
		_, err := ParseConfig("e.yaml", []byte(c.yml))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.yml, err, c.want)
		}
	}
	for _, ok := range []string{
		"inputs:\n  - {name: a, type: tcp, listen: \"127.0.0.1:5514\"}\n  - {name: b, type: udp, listen: \"127.0.0.1:5514\"}\n" + out,
		"inputs:\n  - {name: a, type: tcp, listen: \"127.0.0.1:0\"}\n  - {name: b, type: tcp, listen: \"127.0.0.1:0\"}\n" + out,
		"inputs:\n  - {name: a, type: tcp, listen: \"127.0.0.1:5514\"}\n  - {name: b, type: tcp, listen: \"127.0.0.2:5514\"}\n" + out,
	} {
		if _, err := ParseConfig("e.yaml", []byte(ok)); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
}

// TestConfigRuleKeyForms: field and fields together, and on_miss.defaults
// as a list, are refused; each passed --check-config and did something
// else than written (field ignored; the list's names written as values).
func TestConfigRuleKeyForms(t *testing.T) {
	const head = "inputs: [{type: tcp, listen: \"127.0.0.1:0\"}]\noutputs: [{type: stdout}]\ntables: {path: t}\nrules:\n"
	for _, c := range []struct{ yml, want string }{
		{head + "  - {table: customers, field: a, fields: [b]}\n", "e.yaml:5:5: rules[0]: give field or fields, not both"},
		{head + "  - {table: customers, field: a, on_miss: {defaults: [x, y]}}\n", "e.yaml:5:54: rules[0].on_miss.defaults: must be a mapping from output name to the value written on a miss"},
	} {
		_, err := ParseConfig("e.yaml", []byte(c.yml))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.yml, err, c.want)
		}
	}
	if _, err := ParseConfig("e.yaml", []byte(head+"  - {table: customers, field: a, on_miss: {defaults: {name: unknown}}}\n")); err != nil {
		t.Errorf("defaults as a mapping: %v", err)
	}
}
