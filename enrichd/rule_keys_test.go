package enrichd

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lutkit/lutkit/compile"
	"github.com/lutkit/lutkit/compile/source"
)

// keyTables compiles into dir a table of each match kind, with the key
// its lookups take: svc (exact, host and port), ports (integer range),
// blocks (IPv4 range), ioc (suffix), hosts (wildcard), ua (pattern) and
// leases (exact, ip and vrf, bounded in time).
func keyTables(t *testing.T, dir string) {
	t.Helper()
	for _, tb := range []struct {
		name, csv string
		opts      compile.Options
	}{
		{"svc", "host,port,svc\nweb1,443,https\n", compile.Options{Key: []string{"host", "port"}}},
		{"ports", "from,to,svc\n0,1023,system\n", compile.Options{Match: "range", RangeColumns: []string{"from", "to"}}},
		{"blocks", "from,to,owner\n10.1.2.0,10.1.2.255,acme\n", compile.Options{Match: "range", RangeColumns: []string{"from", "to"}}},
		{"ioc", "domain,threat\nevil.com,malware\n", compile.Options{Key: []string{"domain"}, Match: "suffix"}},
		{"hosts", "glob,group\nweb*,frontend\n", compile.Options{Key: []string{"glob"}, Match: "wildcard"}},
		{"ua", "re,client\ncurl/[0-9],curl\n", compile.Options{Key: []string{"re"}, Match: "pattern"}},
		{"leases", "ip,vrf,start,end,user\n10.1.2.3,red,2026-03-01T08:00:00Z,,ann\n", compile.Options{Key: []string{"ip", "vrf"}, ValidFrom: "start", ValidTo: "end"}},
	} {
		src, err := source.NewCSVReader(strings.NewReader(tb.csv), tb.name+".csv", source.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := compile.File(src, filepath.Join(dir, tb.name+".lut"), tb.opts); err != nil {
			t.Fatalf("%s: %v", tb.name, err)
		}
	}
}

// keyRulesConfig is a configuration of the tables in dir with rules,
// writing to out.
func keyRulesConfig(t *testing.T, dir, out, rules string) *Config {
	t.Helper()
	yml := fmt.Sprintf(`
inputs:
  - {name: tcp, type: tcp, listen: "127.0.0.1:0"}
  - {name: json, type: tcp, listen: "127.0.0.1:0", format: json}
tables: {path: %q, verify: digest}
rules:
%soutputs:
  - {type: file, path: %q}
`, dir, rules, out)
	cfg, err := ParseConfig(filepath.Join(dir, "enrichd.yaml"), []byte(yml))
	if err != nil {
		t.Fatalf("%v\n%s", err, yml)
	}
	return cfg
}

// TestRuleKeyFields: a rule whose fields do not make its table's key (as
// many as the key columns; one for a range table, whose key is a number
// within two columns; one per element with each) is refused by the check
// of the configuration, at the rule's field, and by the daemon's start;
// rules whose fields do make it find their rows, whatever the table's
// match kind.
func TestRuleKeyFields(t *testing.T) {
	dir := t.TempDir()
	keyTables(t, dir)
	out := filepath.Join(dir, "out.json")
	for _, tc := range []struct{ rule, want string }{
		{`{table: svc, field: host}`, `rules[0].field: table "svc" has 2 key columns (host, port), so the rule needs 2 fields, not 1`},
		{`{table: svc, fields: [host, kv.port, kv.x]}`, `rules[0].field: table "svc" has 2 key columns (host, port), so the rule needs 2 fields, not 3`},
		{`{table: ioc, fields: [dns, x]}`, `rules[0].field: table "ioc" has 1 key column (domain), so the rule needs 1 field, not 2`},
		{`{table: hosts, fields: [host, x]}`, `rules[0].field: table "hosts" has 1 key column (glob), so the rule needs 1 field, not 2`},
		{`{table: ua, fields: [ua, x]}`, `rules[0].field: table "ua" has 1 key column (re), so the rule needs 1 field, not 2`},
		{`{table: ports, fields: [from, to]}`, `rules[0].field: table "ports" is a range table (from, to): a lookup takes one field, its integer or IPv4 address, not 2`},
		{`{table: blocks, fields: [src, x]}`, `rules[0].field: table "blocks" is a range table (from, to): a lookup takes one field, its integer or IPv4 address, not 2`},
		{`{table: leases, field: ip}`, `rules[0].field: table "leases" has 2 key columns (ip, vrf), so the rule needs 2 fields, not 1`},
		{`{table: svc, field: hosts, each: true}`, `rules[0].field: table "svc" has 2 key columns (host, port), and each looks every element of one field up as a whole key: use a table of one key column`},
	} {
		cfg := keyRulesConfig(t, dir, out, "  - "+tc.rule+"\n")
		_, err := CheckTables(cfg)
		if err == nil || !strings.Contains(err.Error(), cfg.File+":7:") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: check: %v\nwant at line 7: %s", tc.rule, err, tc.want)
		}
		if d, err := New(cfg, slog.New(slog.DiscardHandler)); err == nil {
			d.closeAll()
			t.Errorf("%s: the daemon started", tc.rule)
		} else if !strings.Contains(err.Error(), strings.TrimPrefix(tc.want, "rules[0].field: ")) {
			t.Errorf("%s: start: %v", tc.rule, err)
		}
	}

	cfg := keyRulesConfig(t, dir, out, `  - {name: svc, table: svc, fields: [kv.host, port], target: svc, on_miss: {tag: svc_miss}}
  - {name: ports, table: ports, field: port, target: ports, on_miss: {tag: ports_miss}}
  - {name: blocks, table: blocks, field: src, target: blocks, on_miss: {tag: blocks_miss}}
  - {name: ioc, table: ioc, field: dns, target: ioc, on_miss: {tag: ioc_miss}}
  - {name: hosts, table: hosts, field: kv.host, target: hosts, on_miss: {tag: hosts_miss}}
  - {name: ua, table: ua, field: ua, target: ua, on_miss: {tag: ua_miss}}
  - {name: leases, table: leases, fields: [src, vrf], target: leases, on_miss: {tag: leases_miss}}
`)
	if _, err := CheckTables(cfg); err != nil {
		t.Fatal(err)
	}
	r := startDaemon(t, cfg)
	c := dialTCP(t, r.d, "tcp")
	send(t, c, []byte("<13>1 - h app - - - host=web1 port=443 src=10.1.2.3 vrf=red dns=a.evil.com ua=curl/8\n"))
	c.Close()
	m := decode(t, waitLines(t, out, 1, 20*time.Second)[0])
	for _, want := range []struct{ path, value string }{
		{"svc.svc", "https"}, {"ports.svc", "system"}, {"blocks.owner", "acme"}, {"ioc.threat", "malware"},
		{"hosts.group", "frontend"}, {"ua.client", "curl"}, {"leases.user", "ann"},
	} {
		if got := get(m, want.path); got != want.value {
			t.Errorf("%s = %v, want %q (event %v)", want.path, got, want.value, m)
		}
	}
	if tags, ok := m["tags"]; ok {
		t.Errorf("tags %v: a rule missed", tags)
	}
}
