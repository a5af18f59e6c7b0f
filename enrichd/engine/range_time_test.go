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

// TestRangeTimeAtEventTime: a rule on a range table bounded in time (the
// port blocks of a CGNAT address, each held by a subscriber from one time
// to another) answers each syslog event's port at the event's own
// timestamp: the block handed over at 12:00:00 answers its old holder at
// 11:59:59.999 and its new one at 12:00:00; a several-match rule lists
// the block's holder then the pool, narrowest first; a port in no block
// misses.
func TestRangeTimeAtEventTime(t *testing.T) {
	dir := t.TempDir()
	csv := "from,to,start,end,subscriber\n" +
		"1024,2047,2026-03-01T08:00:00Z,2026-03-01T12:00:00Z,sub-17\n" +
		"1024,2047,2026-03-01T12:00:00Z,,sub-42\n" +
		"1024,4095,,,pool\n"
	src, err := source.NewCSVReader(strings.NewReader(csv), "cgnat.csv", source.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := compile.File(src, filepath.Join(dir, "cgnat.lut"), compile.Options{Match: compile.MatchRange,
		RangeColumns: []string{"from", "to"}, ValidFrom: "start", ValidTo: "end", Overlap: "narrowest"}); err != nil {
		t.Fatal(err)
	}
	rules := []Rule{
		{Name: "sub", Table: "cgnat", Fields: []string{"kv.sport"}, Target: "sub", Columns: []Rename{{"subscriber", "id"}}, MissTag: "no_sub"},
		{Name: "all", Table: "cgnat", Fields: []string{"kv.sport"}, Target: "holders", Columns: []Rename{{"subscriber", "id"}}, MaxMatches: 4},
	}
	msg := func(ts, port string) string { return "<13>1 " + ts + " nat01 cgnat - - - sport=" + port }
	_, out := runRules(t, dir, rules, Options{KV: KVUsed, EventTime: "syslog"}, Syslog, time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC),
		msg("2026-03-01T11:59:59.999Z", "1500"),
		msg("2026-03-01T12:00:00Z", "1500"),
		msg("2026-03-01T07:00:00Z", "2047"),
		msg("2026-03-01T13:00:00+01:00", "1024"), // 12:00 UTC
		msg("2026-03-01T12:00:00Z", "4096"),
	)
	for i, c := range []struct {
		sub     string
		holders []string
	}{
		{"sub-17", []string{"sub-17", "pool"}},
		{"sub-42", []string{"sub-42", "pool"}},
		{"pool", []string{"pool"}},
		{"sub-42", []string{"sub-42", "pool"}},
		{"", nil},
	} {
		sub, _ := out[i]["sub"].(map[string]any)
		if got, _ := sub["id"].(string); got != c.sub {
			t.Errorf("event %d: sub %q, want %q (%v)", i, got, c.sub, out[i])
		}
		if got := values(t, out[i], "holders", "id"); !reflect.DeepEqual(got, c.holders) {
			t.Errorf("event %d: holders %v, want %v (%v)", i, got, c.holders, out[i])
		}
		tags, _ := out[i]["tags"].([]any)
		if missed := len(tags) > 0 && tags[0] == "no_sub"; missed != (c.sub == "") {
			t.Errorf("event %d: tags %v", i, tags)
		}
	}
}
