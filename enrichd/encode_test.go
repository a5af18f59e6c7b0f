package enrichd

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

	"github.com/lutkit/lutkit/compile"
	"github.com/lutkit/lutkit/compile/source"
	"github.com/lutkit/lutkit/internal/testfiles"
	"github.com/lutkit/lutkit/tables"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/encode.golden")

// compileCSV compiles csv (with a header line) to path, keyed by key.
func compileCSV(t testing.TB, path, csv string, key ...string) {
	t.Helper()
	src, err := source.NewCSVReader(strings.NewReader(csv), "t.csv", source.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := compile.File(src, path, compile.Options{Key: key}); err != nil {
		t.Fatal(err)
	}
}

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
	if err := os.Symlink(testfiles.CityMMDB(t), filepath.Join(dir, "geo.mmdb")); err != nil {
		t.Fatal(err)
	}
}

// goldenConfigs are the rule sets and pipeline options TestEncodeGolden
// encodes every event with.
var goldenConfigs = []string{
	// Every column, defaults on a miss, MMDB, key=value pairs used.
	`
rules:
  - {name: people, table: people, field: id, target: person, on_miss: {tag: person_miss, defaults: {status: MISS, name: nobody}}}
  - {name: geo, table: geo, field: src, target: source.geo, mmdb_fields: {country_code: country_iso_code, city: city_name, latitude: lat, longitude: geo.lon, postcode: zip, nosuch: gone}, on_miss: {defaults: {country_iso_code: "--", region: "n/a"}}}
`,
	// Renamed columns nesting into header objects, a column the table does
	// not have, a default for an output no column writes, composite keys,
	// all key=value pairs, event.original, no structured data.
	`
pipeline: {kv_fields: all, original: true, structured_data: false}
rules:
  - name: people
    table: people
    field: kv.id
    target: person
    columns: [name, {note: details.note}, {city: where}, {nosuch: gone}]
    on_miss: {tag: person_miss, defaults: {name: "n\"o\\body", extra: "\u00e9"}}
  - {name: owner, table: pairs, fields: [host, appname], target: host, columns: {owner: owner, team: team.name}}
  - {name: log, table: pairs, fields: [host, appname], target: log.syslog.owner, columns: [owner]}
  - {name: missing, table: nosuchtable, field: id, target: m, on_miss: {tag: m_miss}}
`,
	// No key=value pairs, every column without defaults, no miss tag,
	// structured data; a rule reading a structured data parameter.
	`
pipeline: {kv_fields: none, structured_data: true}
rules:
  - {name: people, table: people, field: "sd.meta@1.id", target: a.b.c}
  - {name: people2, table: people, field: json.user.id, target: j, columns: [name]}
`,
}

// goldenEvents are the messages of TestEncodeGolden, by input format.
var goldenEvents = map[uint8][]string{
	fmtSyslog: {
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
	fmtJSON: {
		`{"id":"1","src":"8.8.8.8","user":{"id":"3"}}`,
		`  { "id" : 2 , "user" : { "id" : "4\u0022" } }  `,
		`{}`,
		`{"user":{"id":"5"},"msg":"\u00e9 \ud83d\ude00"}`,
		`{"id":"1"`,
		`[1,2]`,
		"{\"id\":\"bad\xff\"}",
	},
	fmtRaw: {
		`id=1 src=8.8.8.8`,
		"id=5 raw \"quoted\" \\ \x7f\x00 line",
		``,
	},
}

// TestEncodeGolden encodes events of every input format and many shapes
// with several rule sets and compares the output with
// testdata/encode.golden, byte for byte. Run with -update to rewrite it.
func TestEncodeGolden(t *testing.T) {
	dir := t.TempDir()
	goldenTables(t, dir)
	set, err := tables.Open(dir, tables.Options{NoWatch: true, DataVerify: tables.DataVerifyDigest, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	now := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	var got bytes.Buffer
	for ci, yml := range goldenConfigs {
		cfg, err := ParseConfig(filepath.Join(dir, "enrichd.yaml"), []byte(fmt.Sprintf("tables: {path: %q}\nhttp: {listen: \"127.0.0.1:0\"}\n%s", dir, yml)))
		if err != nil {
			t.Fatalf("config %d: %v", ci, err)
		}
		p, err := NewPipeline(cfg, set)
		if err != nil {
			t.Fatalf("config %d: %v", ci, err)
		}
		// A small worker, so that batches span several chunks.
		w := p.newWorker(4)
		for _, f := range []uint8{fmtSyslog, fmtJSON, fmtRaw} {
			fmt.Fprintf(&got, "# config %d, format %d\n", ci, f)
			b := &batch{format: f}
			for i, ev := range goldenEvents[f] {
				var flags uint8
				if i%5 == 4 {
					flags = flagTruncated
				}
				b.add([]byte(ev), flags)
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
