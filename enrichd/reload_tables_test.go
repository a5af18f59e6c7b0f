package enrichd

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// tablesConfig is a configuration with a TCP input, two rules on the
// customers table of dir (its Customer Id under x1, its Email under x2),
// a file output, the lookup API and memcached.
func tablesConfig(dir, out string) string {
	return fmt.Sprintf(`
inputs:
  - {name: tcp, type: tcp, listen: "127.0.0.1:0"}
tables: {path: %q, verify: digest}
rules:
  - {name: id, table: customers, field: cust, target: x1, columns: ["Customer Id"]}
  - {name: email, table: customers, field: cust, target: x2, columns: [Email]}
outputs:
  - {type: file, path: %q}
http: {listen: "127.0.0.1:0"}
memcached: {listen: "127.0.0.1:0"}
drain_read_grace: 300ms
`, dir, out)
}

// apiRow returns the body of GET /v1/tables/customers/KEY.
func apiRow(t *testing.T, r *running, key int) string {
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("http://%s/v1/tables/customers/%d", r.d.HTTPAddr(), key))
	must(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	must(t, err)
	return string(b)
}

// memcachedRow returns memcached's answer to "get customers:KEY".
func memcachedRow(t *testing.T, r *running, key int) string {
	t.Helper()
	c, err := net.Dial("tcp", r.d.MemcachedAddr().String())
	must(t, err)
	defer c.Close()
	must(t, c.SetDeadline(time.Now().Add(time.Minute)))
	send(t, c, []byte(fmt.Sprintf("get customers:%d\r\n", key)))
	br := bufio.NewReader(c)
	var b strings.Builder
	for {
		l, err := br.ReadString('\n')
		must(t, err)
		b.WriteString(l)
		if l == "END\r\n" {
			return b.String()
		}
	}
}

// startTables runs a daemon on tables directory v1 (customers version 1)
// and builds directory v2 (version 2) beside it.
func startTables(t *testing.T, rows int) (r *running, path, out, v1, v2 string, logs *syncBuffer) {
	t.Helper()
	dir := t.TempDir()
	v1, v2 = filepath.Join(dir, "v1"), filepath.Join(dir, "v2")
	for i, d := range []string{v1, v2} {
		must(t, os.Mkdir(d, 0o755))
		buildCustomers(t, filepath.Join(d, "customers.lut"), rows, i+1)
	}
	out = filepath.Join(dir, "out.json")
	r, path, logs = startOutputs(t, dir, tablesConfig(v1, out))
	return r, path, out, v1, v2, logs
}

// sendCustomers sends events seq=0..n-1, event i about customer
// i%rows+1, over one TCP connection, waiting on pause before event at.
func sendCustomers(addr string, n, at int, pause <-chan struct{}, rows int) error {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(c, 1<<16)
	for i := range n {
		if i == at {
			if err := w.Flush(); err != nil {
				return err
			}
			<-pause
		}
		fmt.Fprintf(w, "<134>1 2026-11-30T05:24:00.000Z h app 1 m - seq=%d cust=%d\n", i, i%rows+1)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return c.Close()
}

// TestReloadTables streams numbered events over TCP while reloads switch
// tables.path between a directory of customers version 1 and one of
// version 2, five times: every event arrives once, its two lookups (two
// rules on the table) both from version 1 or both from version 2, never
// one of each nor none; the events sent after the last reload from
// version 2. The lookup API, asked all along, always answers with the
// row of one version; it and memcached answer from version 2 after the
// last reload; the first set is closed; the reloads are logged and
// counted as switches of the tables.
func TestReloadTables(t *testing.T) {
	n := 100_000
	if raceEnabled || testing.Short() {
		n = 30_000
	}
	const rows = 2000
	r, path, out, v1, v2, logs := startTables(t, rows)
	if row := apiRow(t, r, 7); !strings.Contains(row, `"C7-1"`) {
		t.Fatalf("API before the reload: %s", row)
	}
	old := r.d.Set()
	swaps := metric(t, r.d, `enrichd_table_swaps_total`)
	last := n - n/10 // events from here on are sent after the reload
	reloaded := make(chan struct{})
	sendDone := make(chan error, 1)
	go func() { sendDone <- sendCustomers(r.d.Addr("tcp").String(), n, last, reloaded, rows) }()
	// The lookup API is asked all along: every answer is the row, from
	// one version or the other (a request on a closed set would find no
	// table).
	apiStop, apiDone := make(chan struct{}), make(chan error, 1)
	var asked int
	go func() {
		for {
			select {
			case <-apiStop:
				apiDone <- nil
				return
			default:
			}
			resp, err := http.Get(fmt.Sprintf("http://%s/v1/tables/customers/7", r.d.HTTPAddr()))
			if err != nil {
				apiDone <- err
				return
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"C7-1"`) && !strings.Contains(string(body), `"C7-2"`) {
				apiDone <- fmt.Errorf("answer %d during the reloads: %s (%w)", resp.StatusCode, body, err)
				return
			}
			asked++
		}
	}()
	// Five reloads while the events stream, between version 2 and 1, the
	// last to version 2 before the last tenth is sent.
	for i, dir := range []string{v2, v1, v2, v1, v2} {
		for deadline := time.Now().Add(2 * time.Minute); r.d.eventsOut.Load() < uint64((i+1)*n/10); {
			if time.Now().After(deadline) {
				t.Fatalf("%d events written, waiting for %d", r.d.eventsOut.Load(), (i+1)*n/10)
			}
			time.Sleep(time.Millisecond)
		}
		must(t, os.WriteFile(path, []byte(tablesConfig(dir, out)), 0o644))
		if err := r.d.Reload(func() (*Config, error) { return LoadConfig(path) }); err != nil {
			t.Fatal(err)
		}
	}
	close(reloaded)
	close(apiStop)
	if err := <-apiDone; err != nil {
		t.Fatal(err)
	}
	t.Logf("%d API lookups during the reloads", asked)
	if err := <-sendDone; err != nil {
		t.Fatalf("sending: %v", err)
	}
	if r.d.Set() == old {
		t.Fatal("the table set was not switched")
	}
	sn := old.Acquire()
	if names := sn.Names(); len(names) != 0 {
		t.Errorf("the old set still serves %v: not closed", names)
	}
	sn.Release()
	if row := apiRow(t, r, 7); !strings.Contains(row, `"C7-2"`) || !strings.Contains(row, "u7@v2.example") {
		t.Errorf("API after the reload: %s", row)
	}
	if row := memcachedRow(t, r, 8); !strings.Contains(row, "C8-2") {
		t.Errorf("memcached after the reload: %q", row)
	}
	waitLines(t, out, n, 5*time.Minute)
	if v := metric(t, r.d, `enrichd_config_reload_table_switches_total`); v != 5 {
		t.Errorf("table switches counted %v, want 5", v)
	}
	// Each set's first load is a publish: the counter goes on across the
	// switches, and the generation is the new set's.
	if v := metric(t, r.d, `enrichd_table_swaps_total`); v < swaps+5 {
		t.Errorf("table swaps %v after five switches, %v before", v, swaps)
	}
	if v := metric(t, r.d, `enrichd_table_generation`); v != 1 {
		t.Errorf("table generation %v, want 1 (the new set's first load)", v)
	}
	checkDeliveredCount(t, r.d, len(readLines(t, out)))
	r.stop(t)
	var olds, news int
	eachNumbered(t, readLines(t, out), n, func(seq int, m map[string]any, l string) {
		cust := seq%rows + 1
		id, email := get(m, "x1.Customer Id"), get(m, "x2.Email")
		switch {
		case id == fmt.Sprintf("C%d-1", cust) && email == fmt.Sprintf("u%d@v1.example", cust):
			olds++
			if seq >= last {
				t.Fatalf("event %d, sent after the last reload, enriched from version 1: %s", seq, l)
			}
		case id == fmt.Sprintf("C%d-2", cust) && email == fmt.Sprintf("u%d@v2.example", cust):
			news++
		default:
			t.Fatalf("event %d not enriched wholly from one table set: %s", seq, l)
		}
	})
	if olds == 0 || news < n-last {
		t.Fatalf("%d events from version 1, %d from version 2", olds, news)
	}
	t.Logf("%d events: %d from version 1, %d from version 2", n, olds, news)
	if !strings.Contains(logs.String(), "tables_switched=true") {
		t.Errorf("the reload's log line does not say the tables switched:\n%s", logs.String())
	}
}

// TestReloadTablesMissing: a reload to a tables path that does not exist
// is refused; the old set goes on serving the events, the API and
// memcached.
func TestReloadTablesMissing(t *testing.T) {
	r, path, out, v1, _, logs := startTables(t, 100)
	old := r.d.Set()
	must(t, os.WriteFile(path, []byte(tablesConfig(filepath.Join(filepath.Dir(v1), "nosuch"), out)), 0o644))
	err := r.d.Reload(func() (*Config, error) { return LoadConfig(path) })
	var re *ReloadError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "tables:") || !strings.Contains(err.Error(), "no such file or directory") {
		t.Fatalf("reload: %v, want the missing tables refused", err)
	}
	if !strings.Contains(logs.String(), "configuration reload refused") {
		t.Errorf("the refusal is not logged:\n%s", logs.String())
	}
	if r.d.Set() != old {
		t.Fatal("the table set was switched")
	}
	c := dialTCP(t, r.d, "tcp")
	send(t, c, []byte("<134>1 2026-11-30T05:24:00.000Z h app 1 m - seq=0 cust=7\n"))
	c.Close()
	m := decode(t, waitLines(t, out, 1, time.Minute)[0])
	if get(m, "x1.Customer Id") != "C7-1" || get(m, "x2.Email") != "u7@v1.example" {
		t.Errorf("event after the refused reload: %v", m)
	}
	if row := apiRow(t, r, 7); !strings.Contains(row, `"C7-1"`) {
		t.Errorf("API after the refused reload: %s", row)
	}
	if row := memcachedRow(t, r, 7); !strings.Contains(row, "C7-1") {
		t.Errorf("memcached after the refused reload: %q", row)
	}
	if v := metric(t, r.d, `enrichd_config_reload_table_switches_total`); v != 0 {
		t.Errorf("table switches counted %v, want 0", v)
	}
}
