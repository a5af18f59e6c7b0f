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

// TestChainedRulesLogger: a chained three-rule configuration (IP ->
// site, site -> owner, owner -> team) with when conditions and the
// syslog event time, fed by the real logger over syslog TCP
// (octet-counted RFC 5424); each event's site, owner, team and tags are
// checked against the golden output, and the lookup counters against
// what the file holds.
func TestChainedRulesLogger(t *testing.T) {
	logger := needTool(t, "logger", "bsdutils")
	dir := t.TempDir()
	for name, csv := range map[string]string{
		"sites":  "ip,site\n10.0.0.1,par1\n10.0.0.2,lon2\n10.0.0.3,ghost\n",
		"owners": "site,person\npar1,alice\nlon2,bob\n",
		"teams":  "owner,team,pager\nalice,netops,+33 1\nbob,dba,+44 2\nnobody,triage,none\n",
	} {
		src, err := source.NewCSVReader(strings.NewReader(csv), name+".csv", source.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := compile.File(src, filepath.Join(dir, name+".lut"), compile.Options{Key: []string{strings.SplitN(csv, ",", 2)[0]}}); err != nil {
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
  - name: site
    table: sites
    field: ip
    target: site
    columns: {site: id}
    on_miss: {tag: no_site}
  - name: owner
    table: owners
    field: site.id
    target: owner
    columns: {person: name}
    when: {matched: site}
    on_miss: {tag: no_owner, defaults: {name: nobody}}
  - name: team
    table: teams
    field: owner.name
    target: team
    columns: [team, pager]
    when:
      any:
        - {matched: owner}
        - {field: owner.name, equals: nobody}
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
	ips := []string{"10.0.0.1", "10.0.0.2", "10.0.0.3", "10.9.9.9", "10.0.0.1"}
	golden := []string{
		`{"id":"par1"} {"name":"alice"} {"pager":"+33 1","team":"netops"} null`,
		`{"id":"lon2"} {"name":"bob"} {"pager":"+44 2","team":"dba"} null`,
		`{"id":"ghost"} {"name":"nobody"} {"pager":"none","team":"triage"} ["no_owner"]`,
		`null null null ["no_site"]`,
		`{"id":"par1"} {"name":"alice"} {"pager":"+33 1","team":"netops"} null`,
		`{"id":"lon2"} {"name":"bob"} {"pager":"+44 2","team":"dba"} null`,
	}
	for seq, ip := range ips {
		args := []string{"--server", "127.0.0.1", "--port", port, "--tcp", "--octet-count", "--rfc5424", "-t", "app",
			fmt.Sprintf("seq=%d ip=%s", seq, ip)}
		if b, err := exec.Command(logger, args...).CombinedOutput(); err != nil {
			t.Fatalf("logger %v: %v\n%s", args, err, b)
		}
	}
	// An event without a timestamp: looked up at the receive time.
	c := dialTCP(t, r.d, "tcp")
	send(t, c, []byte("<13>1 - h app - - - seq=5 ip=10.0.0.2\n"))
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
		for _, k := range []string{"site", "owner", "team", "tags"} {
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
	// The counters agree with the file: owner skipped for the event
	// without a site, team for it too; one event had no time of its own.
	for _, c := range []struct {
		sample string
		want   float64
	}{
		{`enrichd_lookups_total{result="hit",rule="site",table="sites"}`, 5},
		{`enrichd_lookups_total{result="miss",rule="site",table="sites"}`, 1},
		{`enrichd_lookups_total{result="hit",rule="owner",table="owners"}`, 4},
		{`enrichd_lookups_total{result="miss",rule="owner",table="owners"}`, 1},
		{`enrichd_lookups_total{result="skipped",rule="owner",table="owners"}`, 1},
		{`enrichd_lookups_total{result="hit",rule="team",table="teams"}`, 5},
		{`enrichd_lookups_total{result="skipped",rule="team",table="teams"}`, 1},
		{`enrichd_event_time_fallback_total{reason="missing",rule="site",table="sites"}`, 1},
		{`enrichd_event_time_fallback_total{reason="missing",rule="team",table="teams"}`, 1},
		{`enrichd_event_time_fallback_total{reason="bad",rule="site",table="sites"}`, 0},
	} {
		if got := metric(t, r.d, c.sample); got != c.want {
			t.Errorf("%s = %v, want %v", c.sample, got, c.want)
		}
	}
}
