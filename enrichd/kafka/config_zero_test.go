package kafka

import (
	"strings"
	"testing"

	"github.com/lutkit/lutkit/enrichd"
)

// TestInputConfigZero: a kafka input's bound whose default is what
// leaving it out gives is refused when given as 0, saying what it takes
// and that leaving it out gives the default; left out, it is the default.
func TestInputConfigZero(t *testing.T) {
	kin := "inputs:\n  - {type: kafka, kafka: {brokers: [k:1], topics: [a], group: g, %s}}\noutputs: [{type: stdout}]\n"
	for set, want := range map[string]string{
		"session_timeout: 0s":    "e.yaml:2:83: inputs[0].kafka.session_timeout: must be a duration such as 10s, not 0 (leave session_timeout out for the default, 45s)",
		"heartbeat_interval: 0s": "e.yaml:2:86: inputs[0].kafka.heartbeat_interval: must be a duration such as 10s, not 0 (leave heartbeat_interval out for the default, 3s)",
		"rebalance_timeout: 0":   "e.yaml:2:85: inputs[0].kafka.rebalance_timeout: must be a duration such as 10s, not 0 (leave rebalance_timeout out for the default, 1m)",
		"max_wait: 0s":           "e.yaml:2:76: inputs[0].kafka.max_wait: must be a duration such as 10s, not 0 (leave max_wait out for the default, 5s)",
		"max_uncommitted: 0":     `e.yaml:2:83: inputs[0].kafka.max_uncommitted: must be a positive integer (suffixes KiB, MiB, GiB allowed), not "0" (leave max_uncommitted out for the default)`,
		"max_bytes: 0":           `e.yaml:2:77: inputs[0].kafka.max_bytes: must be a positive integer (suffixes KiB, MiB, GiB allowed), not "0" (leave max_bytes out for the default)`,
		"min_bytes: 0":           `e.yaml:2:77: inputs[0].kafka.min_bytes: must be a positive integer (suffixes KiB, MiB, GiB allowed), not "0" (leave min_bytes out for the default)`,
	} {
		_, err := enrichd.ParseConfig("e.yaml", []byte(strings.Replace(kin, "%s", set, 1)))
		if err == nil || err.Error() != want {
			t.Errorf("%s: %v\nwant %s", set, err, want)
		}
	}
	cfg, err := enrichd.ParseConfig("e.yaml", []byte(strings.Replace(kin, ", %s", "", 1)))
	if err != nil {
		t.Fatal(err)
	}
	k := cfg.Inputs[0].Settings.(*InputConfig)
	if k.SessionTimeout != DefaultSessionTimeout || k.HeartbeatInterval != DefaultHeartbeatInterval || k.RebalanceTimeout != DefaultRebalanceTimeout ||
		k.MaxWait != DefaultMaxWait || k.MaxUncommitted != DefaultMaxUncommitted || k.MaxBytes != DefaultMaxBytes || k.MinBytes != DefaultMinBytes {
		t.Errorf("defaults: %+v", k)
	}
}
