package enrichd

import (
	"encoding/json"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lutkit/lutkit/compile"
	"github.com/lutkit/lutkit/compile/source"
)

// TestMaxMatchesLogger: the daemon with a several-match rule on an IoC
// suffix table and a rule on a CGNAT port-block table (a range table
// bounded in time) at each event's syslog time. The real logger sends
// numbered events over syslog TCP (their time is logger's now, inside
// the open-ended block); events with timestamps of their own, either
// side of a hand-over at noon, come on a raw connection. Each event's
// output is checked against the golden output, and the lookup counters
// against what the file holds.
func TestMaxMatchesLogger(t *testing.T) {
	logger := needTool(t, "logger", "bsdutils")
	dir := t.TempDir()
	for _, tb := range []struct {
		name, csv string
		opts      compile.Options
	}{
		{"ioc", "domain,threat\n*.evil.com,malware\nc2.evil.com,botnet\nx.c2.evil.com,beacon\n",
			compile.Options{Key: []string{"domain"}, Match: "suffix"}},
		{"cgnat", "from,to,start,end,sub\n1024,2047,,2026-03-01T12:00:00Z,sub-17\n1024,2047,2026-03-01T12:00:00Z,,sub-42\n1024,65535,,,pool\n",
			compile.Options{Match: "range", RangeColumns: []string{"from", "to"}, ValidFrom: "start", ValidTo: "end", Overlap: "narrowest"}},
	} {
		src, err := source.NewCSVReader(strings.NewReader(tb.csv), tb.name+".csv", source.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := compile.File(src, filepath.Join(dir, tb.name+".lut"), tb.opts); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(dir, "out.json")
	yml := fmt.Sprintf(`
inputs:
  - {name: tcp, type: tcp, listen: "127.0.0.1:0"}
tables: {path: %q, verify: digest}
pipeline: {event_time: syslog}
rules:
  - {name: ioc, table: ioc, field: dns, target: ioc, columns: [threat], max_matches: 2,
     on_miss: {tag: clean, defaults: {threat: none}}}
  - {name: sub, table: cgnat, field: sport, target: subs, columns: {sub: id}, max_matches: 3}
outputs:
  - {type: file, path: %q}
http: {listen: "127.0.0.1:0"}
`, dir, out)
	cfg, err := ParseConfig(filepath.Join(dir, "enrichd.yaml"), []byte(yml))
	if err != nil {
		t.Fatalf("%v\n%s", err, yml)
	}
	r := startDaemon(t, cfg)
	_, port, _ := net.SplitHostPort(r.d.Addr("tcp").String())
	golden := []string{
		`[{"threat":"beacon"},{"threat":"botnet"}] [{"id":"sub-42"},{"id":"pool"}] null`,
		`[{"threat":"malware"}] [{"id":"pool"}] null`,
		`[{"threat":"none"}] null ["clean"]`,
		`[{"threat":"botnet"},{"threat":"malware"}] [{"id":"sub-17"},{"id":"pool"}] null`,
		`[{"threat":"botnet"},{"threat":"malware"}] [{"id":"sub-42"},{"id":"pool"}] null`,
		`[{"threat":"none"}] [{"id":"pool"}] ["clean"]`,
	}
	for seq, msg := range []string{"dns=a.x.c2.evil.com sport=1500", "dns=www.evil.com sport=3000", "dns=notevil.com sport=80"} {
		args := []string{"--server", "127.0.0.1", "--port", port, "--tcp", "--octet-count", "--rfc5424", "-t", "app",
			fmt.Sprintf("seq=%d %s", seq, msg)}
		if b, err := exec.Command(logger, args...).CombinedOutput(); err != nil {
			t.Fatalf("logger %v: %v\n%s", args, err, b)
		}
	}
	c := dialTCP(t, r.d, "tcp")
	send(t, c, []byte("<13>1 2026-03-01T11:59:59.999Z h app - - - seq=3 dns=c2.evil.com sport=2047\n"+
		"<13>1 2026-03-01T13:00:00+01:00 h app - - - seq=4 dns=b.c2.EVIL.com sport=1024\n"+
		"<13>1 2026-03-01T12:00:00Z h app - - - seq=5 dns=evil.org sport=65535\n"))
	c.Close()
	lines := waitLines(t, out, len(golden), 20*time.Second)
	got := make([]string, len(golden))
	for _, l := range lines {
		m := decode(t, l)
		sm := seqRE.FindStringSubmatch(fmt.Sprint(m["message"]))
		if sm == nil {
			t.Fatalf("no seq: %s", l)
		}
		seq, _ := strconv.Atoi(sm[1])
		var parts []string
		for _, k := range []string{"ioc", "subs", "tags"} {
			b, _ := json.Marshal(m[k]) // keys sorted
			parts = append(parts, string(b))
		}
		got[seq] = strings.Join(parts, " ")
	}
	for i, want := range golden {
		if got[i] != want {
			t.Errorf("seq %d: %s\nwant    %s", i, got[i], want)
		}
	}
	for _, c := range []struct {
		sample string
		want   float64
	}{
		{`enrichd_lookups_total{result="hit",rule="ioc",table="ioc"}`, 4},
		{`enrichd_lookups_total{result="miss",rule="ioc",table="ioc"}`, 2},
		{`enrichd_lookups_total{result="hit",rule="sub",table="cgnat"}`, 5},
		{`enrichd_lookups_total{result="miss",rule="sub",table="cgnat"}`, 1},
	} {
		if got := metric(t, r.d, c.sample); got != c.want {
			t.Errorf("%s = %v, want %v", c.sample, got, c.want)
		}
	}
}
