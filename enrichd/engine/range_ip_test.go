package engine

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lutkit/lutkit/compile"
	"github.com/lutkit/lutkit/compile/source"
)

// TestRangeIPv4AtEventTime: a rule on an IPv4 range table bounded in time
// (which customer held 10.1.2.0-10.1.2.255 when) answers each syslog
// event's src address, given as text, at the event's own timestamp; an
// address in no range misses.
func TestRangeIPv4AtEventTime(t *testing.T) {
	dir := t.TempDir()
	csv := "from,to,start,end,customer\n" +
		"10.1.2.0,10.1.2.255,2026-03-01T08:00:00Z,2026-03-01T12:00:00Z,acme\n" +
		"10.1.2.0,10.1.2.255,2026-03-01T12:00:00Z,,globex\n" +
		"10.1.3.0,10.1.3.127,,,initech\n"
	src, err := source.NewCSVReader(strings.NewReader(csv), "blocks.csv", source.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := compile.File(src, filepath.Join(dir, "blocks.lut"), compile.Options{Match: compile.MatchRange,
		RangeColumns: []string{"from", "to"}, ValidFrom: "start", ValidTo: "end"}); err != nil {
		t.Fatal(err)
	}
	rules := []Rule{{Name: "cust", Table: "blocks", Fields: []string{"kv.src"}, Target: "cust", Columns: []Rename{{"customer", "name"}}, MissTag: "no_cust"}}
	msg := func(ts, ip string) string { return "<13>1 " + ts + " fw01 fw - - - src=" + ip }
	_, out := runRules(t, dir, rules, Options{KV: KVUsed, EventTime: "syslog"}, Syslog, time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC),
		msg("2026-03-01T11:59:59.999Z", "10.1.2.3"),
		msg("2026-03-01T12:00:00Z", "10.1.2.255"),
		msg("2026-03-01T07:00:00Z", "10.1.2.3"),
		msg("2026-03-01T07:00:00Z", "10.1.3.127"),
		msg("2026-03-01T10:00:00Z", "10.1.3.128"),
		msg("2026-03-01T10:00:00Z", "167838211"), // 10.1.2.3 as a number: not an address
	)
	for i, want := range []string{"acme", "globex", "", "initech", "", ""} {
		cust, _ := out[i]["cust"].(map[string]any)
		if got, _ := cust["name"].(string); got != want {
			t.Errorf("event %d: customer %q, want %q (%v)", i, got, want, out[i])
		}
		tags, _ := out[i]["tags"].([]any)
		if missed := len(tags) > 0 && tags[0] == "no_cust"; missed != (want == "") {
			t.Errorf("event %d: tags %v", i, tags)
		}
	}
}
