package engine

import (
	"bytes"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lutkit/lutkit/tables"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/encode.golden")

// goldenTables writes the tables of TestEncodeGolden to dir: people (key
// id, values that need escaping, a long column name), pairs (composite key host, app) and
// the real city MMDB as geo.
func goldenTables(t testing.TB, dir string) {
	t.Helper()
	compileCSV(t, filepath.Join(dir, "people.lut"), "id,name,note,city,a column name longer than 32 bytes\n"+
		"1,Ann,plain,Paris,l1\n"+
		"2,Bob,\"say \"\"hi\"\"\",Z\u00fcrich,l2\n"+
		"3,Cy,back\\slash,\u65e5\u672c,\n"+
		"4,Di,\"tab\there\",line\u2028sep,l4\n"+
		"5,Ed,ctl\x01\x1f,del\x7f,l5\n"+
		"6,Fay,,,\n"+
		"7,Gus,\"a long value that is well over eight bytes \"\"quoted\"\" and \\ more\",x,l7\n"+
		"8,Hal,</script>&amp;,\u00e9,\"l\"\"8\"\n", "id")
	compileCSV(t, filepath.Join(dir, "pairs.lut"), "host,app,owner,team\n"+
		"web-1,nginx,alice,edge\n"+
		"db-2,postgres,bob,data\n", "host", "app")
	linkMMDB(t, dir)
}

// goldenConfig is one rule set and its options.
type goldenConfig struct {
	rules []Rule
	opts  Options
}

// goldenConfigs are the rule sets and options TestEncodeGolden encodes
// every event with.
var goldenConfigs = []goldenConfig{
	// Every column, defaults on a miss, MMDB, key=value pairs used.
	{opts: Options{KV: KVUsed, StructuredData: true}, rules: []Rule{
		{Name: "people", Table: "people", Fields: []string{"id"}, Target: "person", MissTag: "person_miss",
			Defaults: []Rename{{"status", "MISS"}, {"name", "nobody"}}},
		{Name: "geo", Table: "geo", Fields: []string{"src"}, Target: "source.geo", MMDB: true,
			MMDBFields: []Rename{{"country_code", "country_iso_code"}, {"city", "city_name"}, {"latitude", "lat"}, {"longitude", "geo.lon"}, {"postcode", "zip"}, {"nosuch", "gone"}},
			Defaults:   []Rename{{"country_iso_code", "--"}, {"region", "n/a"}}},
	}},
	// Renamed columns nesting into header objects, a column the table does
	// not have, a default for an output no column writes, composite keys,
	// all key=value pairs, event.original, no structured data.
	{opts: Options{KV: KVAll, Original: true, StructuredData: false}, rules: []Rule{
		{Name: "people", Table: "people", Fields: []string{"kv.id"}, Target: "person",
			Columns: []Rename{{"name", "name"}, {"note", "details.note"}, {"city", "where"}, {"nosuch", "gone"}},
			MissTag: "person_miss", Defaults: []Rename{{"name", "n\"o\\body"}, {"extra", "\u00e9"}}},
		{Name: "owner", Table: "pairs", Fields: []string{"host", "appname"}, Target: "host", Columns: []Rename{{"owner", "owner"}, {"team", "team.name"}}},
		{Name: "log", Table: "pairs", Fields: []string{"host", "appname"}, Target: "log.syslog.owner", Columns: []Rename{{"owner", "owner"}}},
		{Name: "missing", Table: "nosuchtable", Fields: []string{"id"}, Target: "m", MissTag: "m_miss"},
	}},
	// No key=value pairs, every column without defaults, no miss tag,
	// structured data; a rule reading a structured data parameter.
	{opts: Options{KV: KVNone, StructuredData: true}, rules: []Rule{
		{Name: "people", Table: "people", Fields: []string{"sd.meta@1.id"}, Target: "a.b.c"},
		{Name: "people2", Table: "people", Fields: []string{"json.user.id"}, Target: "j", Columns: []Rename{{"name", "name"}}},
	}},
}

// goldenEvents are the messages of TestEncodeGolden, by input format.
var goldenEvents = map[Format][]string{
	Syslog: {
		`<134>1 2024-05-01T10:00:00.000Z web-1 nginx 1234 req - id=1 src=8.8.8.8 action=login`,
		`<134>1 2024-05-01T10:00:00.123456+02:00 db-2 postgres - - [meta@1 id="2" k="a\"b\\c\]d"][other x="y"] id=2 src=81.2.69.160 user="x y"`,
		`<13>1 - - - - - - id=3`,
		`<165>1 2003-10-11T22:14:15.003Z mymachine.example.com evntslog proc-x ID47 [exampleSDID@32473 iut="3" eventSource="Application"] id=4 src=2001:db8::1 msg="\u00e9t\u00e9"`,
		`<34>Oct 11 22:14:15 mymachine su[77]: 'su root' failed for lonvick id=5 src=1.2.3.4`,
		`<34>Oct  1 02:04:05 host app: id=6 src=300.1.1.1 cust=x`,
		"<14>1 2024-05-01T10:00:00Z h a p m - tab\there quote\"q back\\s ctl\x01 bad\xff id=7 src=10.1.2.3",
		`<14>1 2024-05-01T10:00:00Z h a 99999999999999999999 m - id=8 src=216.160.83.56 host=spoof message=spoof tags=spoof`,
		`not syslog at all id=1 src=8.8.4.4`,
		`<999>garbage`,
		``,
		`<14>1 2024-05-01T10:00:00Z h a p m [meta@1 id="7"] id=9 src=2.2.2.2 noval= =nokey "id"=3`,
		"<14>1 2024-05-01T10:00:00Z h a p m - \u2028\u2029 id=8 name=\u65e5\u672c",
	},
	JSON: {
		`{"id":"1","src":"8.8.8.8","user":{"id":"3"}}`,
		`  { "id" : 2 , "user" : { "id" : "4\u0022" } }  `,
		`{}`,
		`{"user":{"id":"5"},"msg":"\u00e9 \ud83d\ude00"}`,
		`{"id":"1"`,
		`[1,2]`,
		"{\"id\":\"bad\xff\"}",
	},
	Raw: {
		`id=1 src=8.8.8.8`,
		"id=5 raw \"quoted\" \\ \x7f\x00 line",
		``,
	},
}

// openGoldenSet opens the golden tables (goldenTables) as a table set,
// closed when the test ends.
func openGoldenSet(t *testing.T) *tables.Set {
	t.Helper()
	dir := t.TempDir()
	goldenTables(t, dir)
	set, err := tables.Open(dir, tables.Options{NoWatch: true, DataVerify: tables.DataVerifyDigest, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { set.Close() })
	return set
}

// TestEncodeGolden encodes events of every input format and many shapes
// with several rule sets and compares the output with
// testdata/encode.golden, byte for byte. Run with -update to rewrite it.
func TestEncodeGolden(t *testing.T) {
	set := openGoldenSet(t)
	now := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	var got bytes.Buffer
	for ci, gc := range goldenConfigs {
		p, err := New(gc.rules, gc.opts, set)
		if err != nil {
			t.Fatalf("config %d: %v", ci, err)
		}
		// A small worker, so that batches span several chunks.
		w := p.NewWorker(4)
		for _, f := range []Format{Syslog, JSON, Raw} {
			fmt.Fprintf(&got, "# config %d, format %d\n", ci, f)
			b := &Batch{Format: f}
			for i, ev := range goldenEvents[f] {
				var flags uint8
				if i%5 == 4 {
					flags = FlagTruncated
				}
				b.Add([]byte(ev), flags)
			}
			got.Write(w.process(b, nil, now))
		}
	}
	golden := filepath.Join("testdata", "encode.golden")
	if *updateGolden {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, got.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want) {
		gl, wl := strings.Split(got.String(), "\n"), strings.Split(string(want), "\n")
		for i := range max(len(gl), len(wl)) {
			var g, w string
			if i < len(gl) {
				g = gl[i]
			}
			if i < len(wl) {
				w = wl[i]
			}
			if g != w {
				t.Fatalf("output differs from %s at line %d:\ngot:  %s\nwant: %s", golden, i+1, g, w)
			}
		}
	}
}
