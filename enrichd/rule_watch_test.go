package enrichd

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lutkit/lutkit/tables/tablebuild"
)

// TestSwapWarnsRulesThatMiss: a new version of the table set that drops
// a table a rule names, or changes a table's key so that a rule's fields
// no longer make it, is swapped in (the set is not the daemon's to
// refuse) with a warning naming the table and the rules that now miss;
// /readyz stays 200 (readyz checks it), serving, and says which rules miss, until a version
// that fits is published, which is logged too. After a reload, the swaps
// are checked against the new rules.
func TestSwapWarnsRulesThatMiss(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	live := filepath.Join(dir, "live")
	must(t, os.MkdirAll(src, 0o755))
	must(t, os.WriteFile(filepath.Join(src, "customers.csv"), []byte("Index,Email\n1,a@example.com\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(src, "services.csv"), []byte("host,port,svc\nweb1,443,https\n"), 0o644))
	build := func(yml string) {
		t.Helper()
		cfg, err := tablebuild.ParseConfig(filepath.Join(src, "tables.yaml"), []byte("tables:\n"+yml))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tablebuild.Build(context.Background(), cfg, live, tablebuild.Options{}); err != nil {
			t.Fatal(err)
		}
	}
	const (
		customers = "  - {name: customers, sources: [customers.csv], key: Index}\n"
		services  = "  - {name: services, sources: [services.csv], key: [host, port]}\n"
		byHost    = "  - {name: services, sources: [services.csv], key: host}\n"
	)
	build(customers + services)
	yml := fmt.Sprintf(`
inputs:
  - {name: tcp, type: tcp, listen: "127.0.0.1:0"}
tables: {path: %q, verify: digest, poll_interval: 20ms}
rules:
  - {name: cust, table: customers, field: cust, target: c}
  - {name: mail, table: customers, field: cust, target: m}
  - {name: svc, table: services, fields: [kv.host, port], target: s}
outputs:
  - {type: file, path: %q}
http: {listen: "127.0.0.1:0"}
`, live, filepath.Join(dir, "out.json"))
	parse := func(yml string) *Config {
		t.Helper()
		cfg, err := ParseConfig(filepath.Join(dir, "enrichd.yaml"), []byte(yml))
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	start := func(cfg *Config) (*running, *logBuffer) {
		t.Helper()
		r, logs := startDaemonLogged(t, cfg)
		for deadline := time.Now().Add(20 * time.Second); !r.d.ready.Load(); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the daemon never became ready")
			}
		}
		return r, logs
	}
	r, logs := start(parse(yml))
	if body := readyz(t, r.d); body != "ready\n" {
		t.Fatalf("/readyz at start: %q", body)
	}
	waitLog := func(s string) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); !strings.Contains(logs.String(), s); {
			if time.Now().After(deadline) {
				t.Fatalf("no log line %q:\n%s", s, logs.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}

	// customers dropped: both its rules miss.
	build(services)
	waitLog(`level=WARN msg="tables: the new version has no table a rule looks up in: its lookups miss (events tagged _table_missing) until the table is published again or the rule is changed" table=customers rules=cust,mail generation=2`)
	c := dialTCP(t, r.d, "tcp")
	send(t, c, []byte("<13>1 - h app - - - cust=1\n"))
	c.Close()
	if m := decode(t, waitLines(t, r.out, 1, 20*time.Second)[0]); !hasTag(m, "_table_missing") || m["c"] != nil {
		t.Errorf("an event without customers: %v", m)
	}
	if body, want := readyz(t, r.d), "ready\nrule cust: no table \"customers\" in the set: its lookups miss\nrule mail: no table \"customers\" in the set: its lookups miss\n"; body != want {
		t.Errorf("/readyz without customers: %q, want %q", body, want)
	}

	// customers back; services keyed by host alone: rule svc misses.
	build(customers + byHost)
	waitLog(`level=INFO msg="tables: the new version has the rule's table again, fitting the rule: its lookups find rows again" rule=cust table=customers generation=3`)
	waitLog(`level=WARN msg="tables: the new version of a rule's table does not fit the rule: its lookups miss until a version that does is published or the rule is changed" rule=svc table=services reason="table \"services\" has 1 key column (host), so the rule needs 1 field, not 2" generation=3`)
	if body, want := readyz(t, r.d), "ready\nrule svc: table \"services\" has 1 key column (host), so the rule needs 1 field, not 2: its lookups miss\n"; body != want {
		t.Errorf("/readyz with services keyed by host: %q, want %q", body, want)
	}
	if n := strings.Count(logs.String(), "tables: the new version has no table a rule looks up in"); n != 1 {
		t.Errorf("%d warnings of the dropped table, want 1:\n%s", n, logs.String())
	}

	// Every rule fits again.
	build(customers + services)
	waitLog(`rule=svc table=services generation=4`)
	if body := readyz(t, r.d); body != "ready\n" {
		t.Errorf("/readyz once every rule fits: %q", body)
	}

	// A reload's rules are those the next swaps are checked against.
	must(t, r.d.Reload(func() (*Config, error) {
		return parse(strings.Replace(yml, "  - {name: mail, table: customers, field: cust, target: m}\n", "", 1)), nil
	}))
	build(services)
	waitLog(`table=customers rules=cust generation=5`)
	r.stop(t)

	// A daemon started with a rule whose table the set lacks (a remote
	// set is not checked before the start) has its line from the start.
	r, logs = start(parse(strings.Replace(yml, "table: customers, field: cust, target: m", "table: sites, field: cust, target: m", 1)))
	waitLog(`msg="rule table not loaded (yet); its lookups miss until it appears" rule=mail table=sites`)
	if body, want := readyz(t, r.d), "ready\nrule cust: no table \"customers\" in the set: its lookups miss\nrule mail: no table \"sites\" in the set: its lookups miss\n"; body != want {
		t.Errorf("/readyz of a daemon started with rules on missing tables: %q, want %q", body, want)
	}
}
