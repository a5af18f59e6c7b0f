package engine

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lutkit/lutkit/compile"
	"github.com/lutkit/lutkit/compile/source"
)

// TestLeaseAtEventTime: a rule with an event time looks a time-bounded
// table (DHCP leases, valid [from, to)) up at each event's own time,
// taken down to the second: the lease that ends at 12:00:00 answers until
// 11:59:59.999, the next one from 12:00:00 on; an event outside every
// lease misses; an event without a time is looked up at receive time.
func TestLeaseAtEventTime(t *testing.T) {
	dir := t.TempDir()
	csv := "ip,valid_from,valid_to,host\n" +
		"10.0.0.1,2026-03-01T10:00:00Z,2026-03-01T12:00:00Z,laptop-ann\n" +
		"10.0.0.1,2026-03-01T12:00:00Z,2026-03-01T14:00:00Z,phone-bob\n" +
		"10.0.0.2,,,printer\n"
	src, err := source.NewCSVReader(strings.NewReader(csv), "leases.csv", source.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := compile.File(src, filepath.Join(dir, "leases.lut"), compile.Options{Key: []string{"ip"}, ValidFrom: "valid_from", ValidTo: "valid_to"}); err != nil {
		t.Fatal(err)
	}
	rules := []Rule{{Name: "lease", Table: "leases", Fields: []string{"json.ip"}, Target: "lease", Columns: []Rename{{"host", "host"}}, MissTag: "no_lease"}}
	recv := time.Date(2026, 3, 1, 13, 0, 0, 0, time.UTC) // phone-bob's lease
	_, out := runRules(t, dir, rules, Options{EventTime: "json.ts"}, JSON, recv,
		`{"ip":"10.0.0.1","ts":"2026-03-01T11:59:59.999Z"}`,
		`{"ip":"10.0.0.1","ts":"2026-03-01T12:00:00Z"}`,
		`{"ip":"10.0.0.1","ts":"2026-03-01T09:59:59Z"}`,
		`{"ip":"10.0.0.1","ts":"2026-03-01T14:00:00Z"}`,
		`{"ip":"10.0.0.1"}`,
		`{"ip":"10.0.0.2","ts":"1999-01-01T00:00:00Z"}`,
	)
	want := []string{"laptop-ann", "phone-bob", "", "", "phone-bob", "printer"}
	for i, w := range want {
		lease, _ := out[i]["lease"].(map[string]any)
		got, _ := lease["host"].(string)
		if got != w {
			t.Errorf("event %d: host %q, want %q (%v)", i, got, w, out[i])
		}
		tags, _ := out[i]["tags"].([]any)
		missTagged := len(tags) > 0 && tags[0] == "no_lease"
		if missTagged != (w == "") {
			t.Errorf("event %d: tags %v, want the miss tag only on a miss", i, tags)
		}
	}
}
