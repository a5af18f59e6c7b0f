package enrichd

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lutkit/lutkit/internal/syncbuf"
)

// reloadConfig is a configuration with a TCP input, two rules on the
// customers table writing under targets a1 and a2 (prefix "a") or b1 and
// b2 (prefix "b"), and a file output.
func reloadConfig(dir, out, prefix string) string {
	return fmt.Sprintf(`
inputs:
  - {name: tcp, type: tcp, listen: "127.0.0.1:0"}
tables: {path: %q, verify: digest}
rules:
  - {name: id, table: customers, field: cust, target: %[3]s1, columns: ["Customer Id"]}
  - {name: email, table: customers, field: cust, target: %[3]s2, columns: [Email]}
outputs:
  - {type: file, path: %[2]q}
http: {listen: "127.0.0.1:0"}
drain_read_grace: 300ms
`, filepath.Join(dir, "tables"), out, prefix)
}

// syncBuffer is a log destination safe for concurrent writes.
type syncBuffer = syncbuf.Buffer

// startReloadable writes the configuration with prefix to dir/enrichd.yaml
// and runs a daemon from it, logging to the returned buffer.
func startReloadable(t *testing.T, rows int) (r *running, path, out string, logs *syncBuffer) {
	t.Helper()
	dir := t.TempDir()
	must(t, os.Mkdir(filepath.Join(dir, "tables"), 0o755))
	buildCustomers(t, filepath.Join(dir, "tables", "customers.lut"), rows, 1)
	out = filepath.Join(dir, "out.json")
	r, path, logs = startOutputs(t, dir, reloadConfig(dir, out, "a"))
	r.out = out
	return r, path, out, logs
}

// TestReloadUnderLoad streams numbered events over one TCP connection
// while the rules are reloaded from writing a1 and a2 to writing b1 and
// b2: every event arrives once, each enriched wholly by the old rules or
// wholly by the new (never a mix), the events sent after the reload by the
// new, and the connection is never reset.
func TestReloadUnderLoad(t *testing.T) {
	n := 200_000
	if raceEnabled || testing.Short() {
		n = 60_000
	}
	const rows = 5000
	r, path, out, logs := startReloadable(t, rows)
	dir := filepath.Dir(path)
	last := n - n/10 // events from here on are sent after the reload
	reloaded := make(chan struct{})
	sendDone := make(chan error, 1)
	go func() {
		c, err := net.Dial("tcp", r.d.Addr("tcp").String())
		if err != nil {
			sendDone <- err
			return
		}
		w := bufio.NewWriterSize(c, 1<<16)
		for i := range n {
			if i == last {
				if err := w.Flush(); err != nil {
					sendDone <- err
					return
				}
				<-reloaded
			}
			fmt.Fprintf(w, "<134>1 2026-11-30T05:24:00.000Z h app 1 m - seq=%d cust=%d\n", i, i%rows+1)
		}
		if err := w.Flush(); err != nil {
			sendDone <- err
			return
		}
		sendDone <- c.Close()
	}()
	// Reload while the first part streams, once some of it is written.
	for deadline := time.Now().Add(2 * time.Minute); r.d.eventsOut.Load() < uint64(n/10); {
		if time.Now().After(deadline) {
			t.Fatalf("%d events written, waiting for %d", r.d.eventsOut.Load(), n/10)
		}
		time.Sleep(2 * time.Millisecond)
	}
	must(t, os.WriteFile(path, []byte(reloadConfig(dir, out, "b")), 0o644))
	if err := r.d.Reload(func() (*Config, error) { return LoadConfig(path) }); err != nil {
		t.Fatal(err)
	}
	close(reloaded)
	if err := <-sendDone; err != nil {
		t.Fatalf("sending: %v", err)
	}
	waitLines(t, out, n, 5*time.Minute)
	r.stop(t)
	var olds, news int
	eachNumbered(t, readLines(t, out), n, func(seq int, m map[string]any, l string) {
		cust := seq%rows + 1
		id, email := fmt.Sprintf("C%d-1", cust), fmt.Sprintf("u%d@v1.example", cust)
		a1, a2 := get(m, "a1.Customer Id"), get(m, "a2.Email")
		b1, b2 := get(m, "b1.Customer Id"), get(m, "b2.Email")
		switch {
		case a1 == id && a2 == email && b1 == nil && b2 == nil:
			olds++
			if seq >= last {
				t.Fatalf("event %d, sent after the reload, enriched by the old rules: %s", seq, l)
			}
		case b1 == id && b2 == email && a1 == nil && a2 == nil:
			news++
		default:
			t.Fatalf("event %d not enriched wholly by one version of the rules: %s", seq, l)
		}
	})
	if olds == 0 || news < n-last {
		t.Fatalf("%d events by the old rules, %d by the new", olds, news)
	}
	t.Logf("%d events: %d by the old rules, %d by the new", n, olds, news)
	if !strings.Contains(logs.String(), `msg="configuration reloaded" rules=2`) {
		t.Errorf("no log line for the reload:\n%s", logs.String())
	}
}

// TestReloadRefused: a configuration that does not parse, that fails the
// check against the tables, or that changes what a reload cannot apply is
// refused with its errors logged, and the running rules go on; each
// reload is counted by result.
func TestReloadRefused(t *testing.T) {
	r, path, out, logs := startReloadable(t, 100)
	dir := filepath.Dir(path)
	good := reloadConfig(dir, out, "b")
	load := func() (*Config, error) { return LoadConfig(path) }
	for i, tc := range []struct{ name, yml, want string }{
		{"syntax", "inputs:\n  - type: tcp\n    listen: 127.0.0.1:0\n   format: json\n", path + ":4: not valid YAML"},
		{"column", strings.Replace(good, "[Email]", "[Emial]", 1), `rules[1].columns[0]: table "customers" has no column "Emial"`},
		{"restart", strings.Replace(good, "drain_read_grace: 300ms", "drain_read_grace: 400ms", 1), "drain_read_grace changed: a reload applies the rules, the tables, the inputs and the outputs only"},
		{"output", strings.Replace(good, "out.json", "missing/other.json", 1), "no such file or directory"},
	} {
		must(t, os.WriteFile(path, []byte(tc.yml), 0o644))
		err := r.d.Reload(load)
		var re *ReloadError
		if !errors.As(err, &re) || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("%s: reload: %v, want %s", tc.name, err, tc.want)
		}
		if strings.Count(logs.String(), "configuration reload refused") != i+1 {
			t.Fatalf("%s: not logged:\n%s", tc.name, logs.String())
		}
	}
	c := dialTCP(t, r.d, "tcp")
	send(t, c, []byte("<134>1 2026-11-30T05:24:00.000Z h app 1 m - seq=1 cust=7\n"))
	m := decode(t, waitLines(t, out, 1, time.Minute)[0])
	if get(m, "a1.Customer Id") != "C7-1" || get(m, "b1.Customer Id") != nil {
		t.Fatalf("the running rules did not stay: %v", m)
	}
	must(t, os.WriteFile(path, []byte(good), 0o644))
	must(t, r.d.Reload(load))
	send(t, c, []byte("<134>1 2026-11-30T05:24:00.000Z h app 1 m - seq=2 cust=8\n"))
	m = decode(t, waitLines(t, out, 2, time.Minute)[1])
	if get(m, "b1.Customer Id") != "C8-1" || get(m, "a1.Customer Id") != nil {
		t.Fatalf("the new rules are not running: %v", m)
	}
	c.Close()
	if v := metric(t, r.d, `enrichd_config_reloads_total{result="failure"}`); v != 4 {
		t.Errorf("failures counted %v, want 4", v)
	}
	if v := metric(t, r.d, `enrichd_config_reloads_total{result="success"}`); v != 1 {
		t.Errorf("successes counted %v, want 1", v)
	}
	// The lookup counters of the rules keep counting across the reload.
	if v := metric(t, r.d, `enrichd_lookups_total{result="hit",rule="id",table="customers"}`); v != 2 {
		t.Errorf("hits of rule id %v, want 2", v)
	}
}

// TestReloadSameSections: the examples, read twice, have no section a
// reload would refuse (every section compares by value), and a changed
// pipeline is one (a changed input, table set or output is not).
func TestReloadSameSections(t *testing.T) {
	// The Kafka example is checked in package enrichd/kafka, which
	// registers its types (TestKafkaExampleSameOnReload).
	for _, f := range []string{"../examples/enrichd.yaml", "../examples/quickstart.yaml"} {
		a, err := LoadConfig(f)
		must(t, err)
		b, err := LoadConfig(f)
		must(t, err)
		if changed := restartSections(a, b); len(changed) != 0 {
			t.Errorf("%s read twice: %v differ", f, changed)
		}
		b.Inputs[0].Listen = "127.0.0.1:1"
		b.Tables.Path = "elsewhere"
		b.Outputs[0].Name = "other"
		b.Pipeline.Workers++
		if changed := restartSections(a, b); strings.Join(changed, ",") != "pipeline" {
			t.Errorf("%s: changed %v, want pipeline", f, changed)
		}
	}
}
