package engine

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lutkit/lutkit/compile"
	"github.com/lutkit/lutkit/compile/source"
)

// TestSuffixTimeAtEventTime: rules on a suffix table bounded in time (a
// domain blocklist whose entries are listed from one time and expire at
// another) answer each syslog event's domain at the event's own
// timestamp: an entry that expires at 12:00:00 answers an event of
// 11:59:59.999 and not one of 12:00:00, when the entry that replaces it
// answers; a several-match rule lists the longest suffix first, each
// with its rows valid then; a rule on a wildcard table bounded in time
// answers the same way.
func TestSuffixTimeAtEventTime(t *testing.T) {
	dir := t.TempDir()
	tables := []struct {
		name, csv string
		opts      compile.Options
	}{
		{"blocklist", "domain,listed,expires,threat\n" +
			"*.evil.com,2026-03-01T08:00:00Z,2026-03-01T12:00:00Z,malware\n" +
			"evil.com,2026-03-01T12:00:00Z,,parked\n" +
			"c2.evil.com,,,botnet\n",
			compile.Options{Key: []string{"domain"}, Match: compile.MatchSuffix, ValidFrom: "listed", ValidTo: "expires"}},
		{"hosts", "host,from,to,group\n" +
			"web-*,,2026-03-01T12:00:00Z,web\n" +
			"web-*,2026-03-01T12:00:00Z,,frontend\n",
			compile.Options{Key: []string{"host"}, Match: compile.MatchWildcard, ValidFrom: "from", ValidTo: "to"}},
	}
	for _, tb := range tables {
		src, err := source.NewCSVReader(strings.NewReader(tb.csv), tb.name+".csv", source.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := compile.File(src, filepath.Join(dir, tb.name+".lut"), tb.opts); err != nil {
			t.Fatal(err)
		}
	}
	rules := []Rule{
		{Name: "ioc", Table: "blocklist", Fields: []string{"kv.dom"}, Target: "ioc", Columns: []Rename{{"threat", "threat"}}, MissTag: "clean"},
		{Name: "all", Table: "blocklist", Fields: []string{"kv.dom"}, Target: "iocs", Columns: []Rename{{"threat", "threat"}}, MaxMatches: 4},
		{Name: "group", Table: "hosts", Fields: []string{"kv.host"}, Target: "group", Columns: []Rename{{"group", "name"}}},
	}
	msg := func(ts, dom string) string { return "<13>1 " + ts + " proxy01 squid - - - host=web-01 dom=" + dom }
	_, out := runRules(t, dir, rules, Options{KV: KVUsed, EventTime: "syslog"}, Syslog, time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC),
		msg("2026-03-01T11:59:59.999Z", "a.evil.com"),
		msg("2026-03-01T12:00:00Z", "a.evil.com"),
		msg("2026-03-01T07:00:00Z", "a.evil.com"),
		msg("2026-03-01T13:00:00+01:00", "x.c2.EVIL.com"), // 12:00 UTC
		msg("2026-03-01T10:00:00Z", "notevil.com"),
	)
	for i, c := range []struct {
		ioc   string
		iocs  []string
		group string
	}{
		{"malware", []string{"malware"}, "web"},
		{"parked", []string{"parked"}, "frontend"},
		{"", nil, "web"},
		{"botnet", []string{"botnet", "parked"}, "frontend"},
		{"", nil, "web"},
	} {
		ioc, _ := out[i]["ioc"].(map[string]any)
		if got, _ := ioc["threat"].(string); got != c.ioc {
			t.Errorf("event %d: ioc %q, want %q (%v)", i, got, c.ioc, out[i])
		}
		if got := values(t, out[i], "iocs", "threat"); !reflect.DeepEqual(got, c.iocs) {
			t.Errorf("event %d: iocs %v, want %v (%v)", i, got, c.iocs, out[i])
		}
		group, _ := out[i]["group"].(map[string]any)
		if got, _ := group["name"].(string); got != c.group {
			t.Errorf("event %d: group %q, want %q (%v)", i, got, c.group, out[i])
		}
		tags, _ := out[i]["tags"].([]any)
		if missed := len(tags) > 0 && tags[0] == "clean"; missed != (c.ioc == "") {
			t.Errorf("event %d: tags %v", i, tags)
		}
	}
}
