package engine

import (
	"encoding/json"
	"log/slog"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lutkit/lutkit/enrichd/parse"
	"github.com/lutkit/lutkit/tables"
)

// chainTables compiles the tables of an IP -> site -> owner -> team
// chain into a new directory: sites by ip, owners by site (the owner in
// column person), teams by owner, and the city MMDB as geo.
func chainTables(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	compileCSV(t, filepath.Join(dir, "sites.lut"), "ip,site\n10.0.0.1,par1\n10.0.0.2,lon2\n10.0.0.3,ghost\n", "ip")
	compileCSV(t, filepath.Join(dir, "owners.lut"), "site,person\npar1,alice\nlon2,bob\n", "site")
	compileCSV(t, filepath.Join(dir, "teams.lut"), "owner,team,pager\nalice,netops,\"+33 1\"\nbob,dba,+44 2\nnobody,triage,none\n", "owner")
	linkMMDB(t, dir)
	return dir
}

// chainRules are the rules of chainTables: the owner rule reads the site
// the first wrote, the team rule the owner name the second wrote (or its
// default, nobody, on a miss).
func chainRules() []Rule {
	return []Rule{
		{Name: "site", Table: "sites", Fields: []string{"ip"}, Target: "site", Columns: []Rename{{"site", "id"}}, MissTag: "no_site"},
		{Name: "owner", Table: "owners", Fields: []string{"site.id"}, Target: "owner", Columns: []Rename{{"person", "name"}},
			Defaults: []Rename{{"name", "nobody"}}},
		{Name: "team", Table: "teams", Fields: []string{"owner.name"}, Target: "team", Columns: []Rename{{"team", "name"}, {"pager", "pager"}}},
	}
}

// runRules processes lines with rules against the tables of dir, and
// returns the engine and the decoded output lines.
func runRules(t *testing.T, dir string, rules []Rule, opts Options, f Format, now time.Time, lines ...string) (*Engine, []map[string]any) {
	t.Helper()
	set, err := tables.Open(dir, tables.Options{NoWatch: true, DataVerify: tables.DataVerifyDigest, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { set.Close() })
	p, err := New(rules, opts, set)
	if err != nil {
		t.Fatal(err)
	}
	b := &Batch{Format: f}
	for _, l := range lines {
		b.Add([]byte(l), 0)
	}
	out := p.NewWorker(4).process(b, nil, now)
	var res []map[string]any
	for _, l := range strings.Split(strings.TrimSuffix(string(out), "\n"), "\n") {
		res = append(res, decode(t, l))
	}
	if len(res) != len(lines) {
		t.Fatalf("%d lines out for %d in", len(res), len(lines))
	}
	return p, res
}

// TestChainedRules: each rule's key is what the one before wrote, its
// default on a miss included; a miss early in the chain makes the rules
// after it miss, as their key is absent.
func TestChainedRules(t *testing.T) {
	dir := chainTables(t)
	_, out := runRules(t, dir, chainRules(), testOptions, Syslog, time.Now(),
		"<13>1 2026-03-01T10:00:00Z h app - - - ip=10.0.0.1",
		"<13>1 2026-03-01T10:00:00Z h app - - - ip=10.0.0.2",
		"<13>1 2026-03-01T10:00:00Z h app - - - ip=10.0.0.3", // a site without owner: the default owner's team
		"<13>1 2026-03-01T10:00:00Z h app - - - ip=10.9.9.9", // no site: the owner default, its team
		"<13>1 2026-03-01T10:00:00Z h app - - - other=1",
		"<13>1 2026-03-01T10:00:00Z h app - - - ip=10.0.0.2",
	)
	want := []string{
		`{"id":"par1"} {"name":"alice"} {"name":"netops","pager":"+33 1"}`,
		`{"id":"lon2"} {"name":"bob"} {"name":"dba","pager":"+44 2"}`,
		`{"id":"ghost"} {"name":"nobody"} {"name":"triage","pager":"none"}`,
		`null {"name":"nobody"} {"name":"triage","pager":"none"}`,
		`null {"name":"nobody"} {"name":"triage","pager":"none"}`,
		`{"id":"lon2"} {"name":"bob"} {"name":"dba","pager":"+44 2"}`,
	}
	for i, m := range out {
		var parts []string
		for _, k := range []string{"site", "owner", "team"} {
			b, _ := json.Marshal(m[k])
			parts = append(parts, string(b))
		}
		if got := strings.Join(parts, " "); got != want[i] {
			t.Errorf("event %d: %s, want %s", i, got, want[i])
		}
	}
	if tags, _ := json.Marshal(out[3]["tags"]); string(tags) != `["no_site"]` {
		t.Errorf("event 3 tags %s", tags)
	}
}

// TestChainedMMDB: rules keyed by what an MMDB rule wrote, and by a
// column of a rule that writes every column.
func TestChainedMMDB(t *testing.T) {
	dir := t.TempDir()
	linkMMDB(t, dir)
	compileCSV(t, filepath.Join(dir, "regions.lut"), "iso,region\nGB,emea\nUS,amer\n", "iso")
	compileCSV(t, filepath.Join(dir, "geonames.lut"), "id,label\nBracknell,bracknell\n", "id")
	rules := []Rule{
		{Name: "geo", Table: "geo", Fields: []string{"src"}, Target: "geo", MMDB: true,
			MMDBFields: []Rename{{"country_code", "iso"}, {"city", "city"}}},
		{Name: "region", Table: "regions", Fields: []string{"geo.iso"}, Target: "region"},
		{Name: "city", Table: "geonames", Fields: []string{"geo.city"}, Target: "city", Columns: []Rename{{"label", "label"}}},
		// A column of a rule that writes every column, under its name.
		{Name: "again", Table: "regions", Fields: []string{"region.iso"}, Target: "again", Columns: []Rename{{"region", "r"}}},
	}
	_, out := runRules(t, dir, rules, testOptions, Syslog, time.Now(), "<13>1 - h app - - - src=81.2.69.142")
	if get(out[0], "geo.iso") != "GB" || get(out[0], "region.region") != "emea" || get(out[0], "city.label") != "bracknell" || get(out[0], "again.r") != "emea" {
		t.Fatalf("%v", out[0])
	}
}

// TestWhen: a rule runs only for the events its condition holds for;
// the others get nothing of it, neither its defaults nor its miss tag,
// and are counted as skipped.
func TestWhen(t *testing.T) {
	dir := chainTables(t)
	site := func(c Cond) []Rule {
		r := chainRules()[:2]
		r[1].When = &c
		r[1].MissTag = "no_owner"
		return r
	}
	lines := []string{
		"<13>1 - h app - - - ip=10.0.0.1 action=deny",
		"<13>1 - h app - - - ip=10.0.0.2 action=allow",
		"<13>1 - h app - - - ip=10.9.9.9 action=drop",
		"<13>1 - h app - - - ip=10.0.0.2",
	}
	for _, c := range []struct {
		name string
		cond Cond
		want string // per event: o owner written, d the default, - nothing
	}{
		{"equals", Cond{Op: CondEquals, Field: "action", Values: []string{"deny"}}, "o---"},
		{"in", Cond{Op: CondIn, Field: "action", Values: []string{"deny", "drop"}}, "o-d-"},
		{"exists", Cond{Op: CondExists, Field: "action", Exists: true}, "ood-"},
		{"absent", Cond{Op: CondExists, Field: "action"}, "---o"},
		{"in_cidr", Cond{Op: CondInCIDR, Field: "ip", Prefixes: []netip.Prefix{netip.MustParsePrefix("10.0.0.2/32"), netip.MustParsePrefix("10.9.0.0/16")}}, "-odo"},
		{"matched", Cond{Op: CondMatched, Rule: "site"}, "oo-o"},
		{"missed", Cond{Op: CondMissed, Rule: "site"}, "--d-"},
		{"chained field", Cond{Op: CondEquals, Field: "site.id", Values: []string{"lon2"}}, "-o-o"},
		{"all", Cond{Op: CondAll, Sub: []Cond{{Op: CondMatched, Rule: "site"}, {Op: CondExists, Field: "action", Exists: true}}}, "oo--"},
		{"any", Cond{Op: CondAny, Sub: []Cond{{Op: CondMissed, Rule: "site"}, {Op: CondEquals, Field: "action", Values: []string{"deny"}}}}, "o-d-"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, out := runRules(t, dir, site(c.cond), testOptions, Syslog, time.Now(), lines...)
			var got strings.Builder
			skipped := 0
			for _, m := range out {
				tags, _ := json.Marshal(m["tags"])
				switch get(m, "owner.name") {
				case nil:
					got.WriteByte('-')
					skipped++
					if strings.Contains(string(tags), "no_owner") {
						t.Errorf("a skipped rule's miss tag: %v", m)
					}
				case "nobody":
					got.WriteByte('d')
					if !strings.Contains(string(tags), "no_owner") {
						t.Errorf("a miss without its tag: %v", m)
					}
				default:
					got.WriteByte('o')
				}
			}
			if got.String() != c.want {
				t.Fatalf("%s, want %s", got.String(), c.want)
			}
			st := p.Stats()[1]
			if int(st.Skipped) != skipped || int(st.Hits+st.Misses+st.Skipped) != len(lines) {
				t.Fatalf("stats %+v, %d skipped", st, skipped)
			}
		})
	}
}

// TestCheckChainAndWhen: what a rule reads must be written before it.
func TestCheckChainAndWhen(t *testing.T) {
	for _, c := range []struct {
		edit func(r []Rule)
		want string
	}{
		{func(r []Rule) { r[0].Fields = []string{"owner.name"} }, `"owner.name" is under the target of rule "owner" (owner), which runs later`},
		{func(r []Rule) { r[1].Fields = []string{"site.nope"} }, `rule "site" writes no field "nope" under its target site`},
		{func(r []Rule) { r[0].When = &Cond{Op: CondMatched, Rule: "team"} }, `rule "team" runs at or after this one`},
		{func(r []Rule) { r[1].When = &Cond{Op: CondMissed, Rule: "nope"} }, `no rule is named "nope"`},
		{func(r []Rule) { r[2].When = &Cond{Op: CondAny} }, `an empty list of conditions`},
		{func(r []Rule) { r[0].Each = true; r[0].Fields = []string{"sd.x@1.ip"} }, `is not a JSON member`},
		{func(r []Rule) { r[0].Each = true; r[1].Fields = []string{"site.id"} }, `writes an array (each): it is not a key`},
		{func(r []Rule) { r[2].At = "json" }, `want syslog, receive or json.PATH`},
		{func(r []Rule) { r[2].Each = true; r[2].Columns = []Rename{{"team", "a.b"}} }, `output names have no dots`},
	} {
		r := chainRules()
		c.edit(r)
		if err := Check(r, testOptions); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Check: %v, want %s", err, c.want)
		}
	}
	if err := Check(chainRules(), testOptions); err != nil {
		t.Fatal(err)
	}
}

// TestEach: every element of an array is looked up, the results written
// as an array in order; a miss is null, or the defaults when the rule
// has some; an event without the array gets no target and the miss tag.
func TestEach(t *testing.T) {
	dir := chainTables(t)
	lines := []string{
		`{"ips":["10.0.0.2","10.9.9.9","10.0.0.1",7,{"x":1},"10.0.0\u002e3"]}`,
		`{"ips":[]}`,
		`{"ips":"10.0.0.1"}`,
		`{"other":1}`,
		`{"ips":["10.9.9.9"]}`,
	}
	for _, c := range []struct {
		name string
		rule Rule
		want []string
		hits uint64
	}{
		{"columns", Rule{Name: "sites", Table: "sites", Fields: []string{"ips"}, Target: "sites", Each: true, Columns: []Rename{{"site", "id"}}, MissTag: "miss"},
			[]string{`[{"id":"lon2"},null,{"id":"par1"},null,null,{"id":"ghost"}]`, `[]`, `null`, `null`, `[null]`}, 1},
		{"all columns and defaults", Rule{Name: "sites", Table: "sites", Fields: []string{"json.ips"}, Target: "a.sites", Each: true, MissTag: "miss",
			Defaults: []Rename{{"site", "?"}}},
			[]string{`[{"ip":"10.0.0.2","site":"lon2"},{"site":"?"},{"ip":"10.0.0.1","site":"par1"},{"site":"?"},{"site":"?"},{"ip":"10.0.0.3","site":"ghost"}]`, `[]`, `null`, `null`, `[{"site":"?"}]`}, 1},
		{"mmdb", Rule{Name: "geo", Table: "geo", Fields: []string{"ips"}, Target: "geo", Each: true, MMDB: true, MissTag: "miss",
			MMDBFields: []Rename{{"country_code", "iso"}}},
			[]string{`[null,null,null,null,null,null]`, `[]`, `null`, `null`, `[null]`}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, out := runRules(t, dir, []Rule{c.rule}, testOptions, JSON, time.Now(), lines...)
			for i, m := range out {
				b, _ := json.Marshal(get(m, c.rule.Target))
				if string(b) != c.want[i] {
					t.Errorf("event %d: %s, want %s", i, b, c.want[i])
				}
				tags, _ := json.Marshal(m["tags"])
				if miss := i >= 1 || c.hits == 0; miss != (string(tags) == `["miss"]`) {
					t.Errorf("event %d: tags %s", i, tags)
				}
			}
			if st := p.Stats()[0]; st.Hits != c.hits || st.Misses != 5-c.hits {
				t.Errorf("stats %+v", st)
			}
		})
	}
	// Addresses the city database has.
	_, out := runRules(t, dir, []Rule{{Name: "geo", Table: "geo", Fields: []string{"ips"}, Target: "geo", Each: true, MMDB: true,
		MMDBFields: []Rename{{"country_code", "iso"}, {"city", "city"}}}}, testOptions, JSON, time.Now(),
		`{"ips":["81.2.69.142","nope","10.0.0.1"]}`)
	if b, _ := json.Marshal(out[0]["geo"]); string(b) != `[{"city":"Bracknell","iso":"GB"},null,null]` {
		t.Fatalf("%s", b)
	}
}

// TestEventTime: the event time of each source, read once per event,
// golden: RFC 3339 with offsets, RFC 3164 in the receive year, JSON
// strings and epochs in seconds and milliseconds; a missing or bad time
// is the receive time, counted in the rule's TimeMissing or TimeBad.
func TestEventTime(t *testing.T) {
	dir := chainTables(t)
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	recv := now.Format(time.RFC3339Nano)
	type ev struct {
		line string
		want string
		st   parse.TimeStatus
	}
	for _, c := range []struct {
		src    string
		format Format
		evs    []ev
	}{
		{"syslog", Syslog, []ev{
			{"<13>1 2026-03-01T10:00:00.250+01:00 h app - - - ip=10.0.0.1", "2026-03-01T09:00:00.25Z", parse.TimeOK},
			{"<13>Feb 28 23:59:59 h app: ip=10.0.0.1", "2026-02-28T23:59:59Z", parse.TimeOK},
			{"<13>1 - h app - - - ip=10.0.0.1", recv, parse.TimeMissing},
			{"<13>1 2026-02-30T10:00:00Z h app - - - ip=10.0.0.1", recv, parse.TimeBad},
			{"no header ip=10.0.0.1", recv, parse.TimeMissing},
		}},
		{"json.ts", JSON, []ev{
			{`{"ip":"10.0.0.1","ts":"2026-03-01T10:00:00-02:00"}`, "2026-03-01T12:00:00Z", parse.TimeOK},
			{`{"ip":"10.0.0.1","ts":1772359200.5}`, "2026-03-01T10:00:00.5Z", parse.TimeOK},
			{`{"ip":"10.0.0.1","ts":1772359200123}`, "2026-03-01T10:00:00.123Z", parse.TimeOK},
			{`{"ip":"10.0.0.1"}`, recv, parse.TimeMissing},
			{`{"ip":"10.0.0.1","ts":null}`, recv, parse.TimeMissing},
			{`{"ip":"10.0.0.1","ts":"yesterday"}`, recv, parse.TimeBad},
			{`{"ip":"10.0.0.1","ts":true}`, recv, parse.TimeBad},
		}},
		{"receive", Syslog, []ev{
			{"<13>1 2026-03-01T10:00:00Z h app - - - ip=10.0.0.1", recv, parse.TimeOK},
		}},
	} {
		t.Run(c.src, func(t *testing.T) {
			set, err := tables.Open(dir, tables.Options{NoWatch: true, DataVerify: tables.DataVerifyDigest, Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			defer set.Close()
			rules := chainRules()[:1]
			p, err := New(rules, Options{EventTime: c.src}, set)
			if err != nil {
				t.Fatal(err)
			}
			w := p.NewWorker(16)
			b := &Batch{Format: c.format}
			for _, e := range c.evs {
				b.Add([]byte(e.line), 0)
			}
			out := w.process(b, nil, now)
			if n := strings.Count(string(out), "\n"); n != len(c.evs) {
				t.Fatalf("%d lines", n)
			}
			var missing, bad uint64
			for i, e := range c.evs {
				got := time.Unix(0, w.times[i]).UTC().Format(time.RFC3339Nano)
				if got != e.want || w.timeSt[i] != e.st {
					t.Errorf("%s: %s (%d), want %s (%d)", e.line, got, w.timeSt[i], e.want, e.st)
				}
				switch e.st {
				case parse.TimeMissing:
					missing++
				case parse.TimeBad:
					bad++
				}
			}
			if st := p.Stats()[0]; st.TimeMissing != missing || st.TimeBad != bad {
				t.Errorf("stats %+v, want %d missing, %d bad", st, missing, bad)
			}
		})
	}
	// A rule's at overrides the pipeline's; rules without a source read
	// no time.
	set, err := tables.Open(dir, tables.Options{NoWatch: true, DataVerify: tables.DataVerifyDigest, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	r := chainRules()
	r[1].At = "json.t"
	p, err := New(r, Options{}, set)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.timeSrcs) != 1 || p.rules[0].timeSrc != -1 || p.rules[1].timeSrc != 0 || p.rules[2].timeSrc != -1 {
		t.Fatalf("sources %v", p.timeSrcs)
	}
}

// TestRulesNoAlloc: chained rules with conditions and an event time
// allocate nothing per batch once warm.
func TestRulesNoAlloc(t *testing.T) {
	dir := chainTables(t)
	set, err := tables.Open(dir, tables.Options{NoWatch: true, DataVerify: tables.DataVerifyDigest, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	r := chainRules()
	r[1].When = &Cond{Op: CondAny, Sub: []Cond{{Op: CondMatched, Rule: "site"}, {Op: CondInCIDR, Field: "ip", Prefixes: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}}}}
	p, err := New(r, Options{KV: KVUsed, EventTime: "syslog"}, set)
	if err != nil {
		t.Fatal(err)
	}
	w := p.NewWorker(64)
	b := &Batch{Format: Syslog}
	var msgs [][]byte
	for i := range 64 {
		msgs = append(msgs, []byte("<13>1 2026-03-01T10:00:00Z h app - - - ip=10.0.0."+string(rune('1'+i%4))))
	}
	for _, m := range msgs {
		b.Add(m, 0)
	}
	all := b.Msgs
	out := make([]byte, 0, 1<<20)
	run := func() {
		b.Msgs = all
		out = w.process(b, out[:0], time.Now())
	}
	run()
	if a := testing.AllocsPerRun(20, run); a > 0 {
		t.Fatalf("%v allocations per batch", a)
	}
}
