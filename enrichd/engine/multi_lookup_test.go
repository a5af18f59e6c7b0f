package engine

import (
	"encoding/json"
	"log/slog"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lutkit/lutkit/compile"
	"github.com/lutkit/lutkit/compile/source"
	"github.com/lutkit/lutkit/tables"
)

// multiTables compiles an IoC suffix table (ioc), a port-range table with
// nested ranges (ports, narrowest first), leases whose validities overlap
// (leases, source order) and an exact table (hosts) into a directory.
func multiTables(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, tb := range []struct {
		name, csv string
		opts      compile.Options
	}{
		{"ioc", "domain,threat\n*.evil.com,malware\nc2.evil.com,botnet\nx.c2.evil.com,beacon\n",
			compile.Options{Key: []string{"domain"}, Match: compile.MatchSuffix}},
		{"ports", "from,to,service\n0,1023,system\n443,443,https\n400,499,web\n",
			compile.Options{Match: compile.MatchRange, RangeColumns: []string{"from", "to"}, Overlap: "narrowest"}},
		{"leases", "ip,start,end,user\n10.0.0.1,100,300,ann\n10.0.0.1,200,400,bob\n10.0.0.1,300,,carl\n",
			compile.Options{Key: []string{"ip"}, ValidFrom: "start", ValidTo: "end", Overlap: "first"}},
		{"hosts", "host,owner\nweb01,ann\n", compile.Options{Key: []string{"host"}}},
	} {
		src, err := source.NewCSVReader(strings.NewReader(tb.csv), tb.name+".csv", source.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := compile.File(src, filepath.Join(dir, tb.name+".lut"), tb.opts); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// values returns the column col of each object of the array at key of
// ev, or nil when ev has no array there.
func values(t *testing.T, ev map[string]any, key, col string) []string {
	t.Helper()
	arr, ok := ev[key].([]any)
	if !ok {
		if _, there := ev[key]; there {
			t.Fatalf("%s is not an array: %v", key, ev[key])
		}
		return nil
	}
	out := []string{}
	for _, o := range arr {
		m, _ := o.(map[string]any)
		s, _ := m[col].(string)
		out = append(out, s)
	}
	return out
}

// TestMaxMatchesRules: rules with max_matches write their target as an
// array of the rows that match, the most specific first (the longest
// suffix; the narrowest range; the leases valid at the event's time in
// source order), the rule's columns in each; a miss takes the miss tag
// and the array of the defaults; an event the rule's when skips gets
// nothing.
func TestMaxMatchesRules(t *testing.T) {
	dir := multiTables(t)
	rules := []Rule{
		{Name: "ioc", Table: "ioc", Fields: []string{"json.host"}, Target: "ioc", Columns: []Rename{{"threat", "threat"}},
			MaxMatches: 2, MissTag: "clean", Defaults: []Rename{{"threat", "none"}}},
		{Name: "port", Table: "ports", Fields: []string{"json.port"}, Target: "svc", MaxMatches: 5,
			When: &Cond{Op: CondExists, Field: "json.port", Exists: true}},
		{Name: "lease", Table: "leases", Fields: []string{"json.ip"}, Target: "lease", Columns: []Rename{{"user", "who"}}, MaxMatches: 3, MissTag: "no_lease"},
		{Name: "host", Table: "hosts", Fields: []string{"json.h"}, Target: "owner", MaxMatches: 3},
	}
	_, out := runRules(t, dir, rules, Options{EventTime: "json.ts"}, JSON, time.Unix(250, 0),
		`{"host":"a.x.c2.EVIL.com","port":443,"ip":"10.0.0.1","ts":250,"h":"web01"}`,
		`{"host":"www.evil.com","port":450,"ip":"10.0.0.1","ts":"1970-01-01T00:05:00Z"}`,
		`{"host":"good.org","port":2000,"ip":"10.0.0.1","ts":99}`,
		`{"ip":"10.0.0.2","h":"web02"}`,
	)
	for i, c := range []struct {
		ioc, port, lease, host []string
		tags                   []any
	}{
		{[]string{"beacon", "botnet"}, []string{"https", "web", "system"}, []string{"ann", "bob"}, []string{"ann"}, nil},
		{[]string{"malware"}, []string{"web", "system"}, []string{"bob", "carl"}, nil, nil},
		{[]string{"none"}, nil, nil, nil, []any{"clean", "no_lease"}},
		{[]string{"none"}, nil, nil, nil, []any{"clean", "no_lease"}},
	} {
		ev := out[i]
		if got := values(t, ev, "ioc", "threat"); !reflect.DeepEqual(got, c.ioc) {
			t.Errorf("event %d: ioc %v, want %v (%v)", i, got, c.ioc, ev)
		}
		if got := values(t, ev, "svc", "service"); !reflect.DeepEqual(got, c.port) {
			t.Errorf("event %d: port %v, want %v (%v)", i, got, c.port, ev)
		}
		if got := values(t, ev, "lease", "who"); !reflect.DeepEqual(got, c.lease) {
			t.Errorf("event %d: lease %v, want %v (%v)", i, got, c.lease, ev)
		}
		if got := values(t, ev, "owner", "owner"); !reflect.DeepEqual(got, c.host) {
			t.Errorf("event %d: owner %v, want %v (%v)", i, got, c.host, ev)
		}
		if tags, _ := ev["tags"].([]any); !reflect.DeepEqual(tags, c.tags) {
			t.Errorf("event %d: tags %v, want %v", i, tags, c.tags)
		}
	}
	// The whole row when the rule keeps every column, typed as the table
	// says, and the port rule's array is in the event in full.
	b, _ := json.Marshal(out[1]["svc"])
	if string(b) != `[{"from":"400","service":"web","to":"499"},{"from":"0","service":"system","to":"1023"}]` {
		t.Errorf("port array %s", b)
	}
}

// TestMaxMatchesChecked: max_matches is refused on an .mmdb rule, with
// each, without a target, with dotted column names and out of range; a
// later rule cannot key on what a several-match rule writes.
func TestMaxMatchesChecked(t *testing.T) {
	base := Rule{Name: "ioc", Table: "ioc", Fields: []string{"json.host"}, Target: "ioc", MaxMatches: 3}
	for _, c := range []struct {
		edit func(r *Rule)
		want string
	}{
		{func(r *Rule) { r.MMDB, r.MMDBFields = true, []Rename{{"city", "city"}} }, "an .mmdb table answers one network"},
		{func(r *Rule) { r.Each = true }, "each rule"},
		{func(r *Rule) { r.Target = "" }, "needs a target"},
		{func(r *Rule) { r.Columns = []Rename{{"threat", "a.b"}} }, "flat objects"},
		{func(r *Rule) { r.MaxMatches = 1001 }, "from 1 to 1000"},
		{func(r *Rule) { r.MaxMatches = -1 }, "from 1 to 1000"},
	} {
		r := base
		c.edit(&r)
		err := Check([]Rule{r}, Options{})
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "max_matches") {
			t.Errorf("%+v: %v, want %q", r, err, c.want)
		}
	}
	if err := Check([]Rule{base}, Options{}); err != nil {
		t.Fatal(err)
	}
	chained := []Rule{base, {Name: "owner", Table: "hosts", Fields: []string{"ioc.threat"}, Target: "owner"}}
	if err := Check(chained, Options{}); err == nil || !strings.Contains(err.Error(), "writes an array") {
		t.Errorf("a key under a several-match rule's target: %v", err)
	}
}

// TestMaxMatchesDoesNotAllocate: a batch of syslog events through
// several-match rules (a suffix table, and a time-bounded table at each
// event's time) allocates nothing once the worker's buffers have grown.
func TestMaxMatchesDoesNotAllocate(t *testing.T) {
	dir := multiTables(t)
	rules := []Rule{
		{Name: "ioc", Table: "ioc", Fields: []string{"kv.dom"}, Target: "ioc", Columns: []Rename{{"threat", "threat"}}, MaxMatches: 3},
		{Name: "lease", Table: "leases", Fields: []string{"kv.addr"}, Target: "lease", MaxMatches: 3, Defaults: []Rename{{"user", "?"}}},
	}
	msg := func(i int) string {
		return "<13>1 1970-01-01T00:04:10Z h app - - - dom=a.x.c2.evil.com addr=10.0.0." + string(rune('1'+i%2))
	}
	_, out := runRules(t, dir, rules, Options{KV: KVUsed, EventTime: "syslog"}, Syslog, time.Unix(0, 0), msg(0), msg(1))
	if got := values(t, out[0], "ioc", "threat"); len(got) != 3 {
		t.Fatalf("ioc %v", got)
	}
	if got := values(t, out[0], "lease", "user"); !reflect.DeepEqual(got, []string{"ann", "bob"}) {
		t.Fatalf("lease %v", got)
	}
	if got := values(t, out[1], "lease", "user"); !reflect.DeepEqual(got, []string{"?"}) {
		t.Fatalf("lease of a miss %v", got)
	}
	set, err := tables.Open(dir, tables.Options{NoWatch: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	p, err := New(rules, Options{KV: KVUsed, EventTime: "syslog"}, set)
	if err != nil {
		t.Fatal(err)
	}
	w := p.NewWorker(64)
	b := &Batch{Format: Syslog}
	for i := range 64 {
		b.Add([]byte(msg(i)), 0)
	}
	all := b.Msgs
	buf := make([]byte, 0, 1<<20)
	run := func() {
		b.Msgs = all
		buf = w.process(b, buf[:0], time.Now())
	}
	run()
	if a := testing.AllocsPerRun(20, run); a > 0 {
		t.Fatalf("%v allocations per batch", a)
	}
}
