package enrichd

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestDrainDelay: on shutdown, /readyz answers 503 for shutdown.drain_delay
// while the daemon still works (a new connection is accepted and its
// events are written); then the normal drain follows.
func TestDrainDelay(t *testing.T) {
	dir := t.TempDir()
	buildCustomers(t, filepath.Join(dir, "customers.lut"), 10, 1)
	out := filepath.Join(dir, "out.json")
	yml := fmt.Sprintf(`
inputs: [{name: tcp, type: tcp, listen: "127.0.0.1:0"}]
tables: {path: %q}
rules: [{table: customers, field: cust, target: c, columns: [Email]}]
outputs: [{type: file, path: %q}]
http: {listen: "127.0.0.1:0"}
shutdown: {drain_delay: 8s}
`, dir, out)
	must(t, os.WriteFile(filepath.Join(dir, "enrichd.yaml"), []byte(yml), 0o644))
	cfg, err := LoadConfig(filepath.Join(dir, "enrichd.yaml"))
	must(t, err)
	r := startDaemon(t, cfg)
	readyz := func() int {
		resp, err := http.Get("http://" + r.d.HTTPAddr().String() + "/readyz")
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for deadline := time.Now().Add(time.Minute); readyz() != http.StatusOK; {
		if time.Now().After(deadline) {
			t.Fatal("never ready")
		}
		time.Sleep(10 * time.Millisecond)
	}
	c := dialTCP(t, r.d, "tcp")
	send(t, c, []byte("<13>1 - h app - - - cust=1\n"))
	waitLines(t, out, 1, time.Minute)
	began := time.Now()
	r.cancel()
	for deadline := time.Now().Add(time.Minute); readyz() != http.StatusServiceUnavailable; {
		if time.Now().After(deadline) {
			t.Fatal("/readyz never answered 503")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Not ready, and still serving: a new connection is accepted, its
	// events and those of the open one are written.
	c2 := dialTCP(t, r.d, "tcp")
	send(t, c2, []byte("<13>1 - h app - - - cust=2\n"))
	send(t, c, []byte("<13>1 - h app - - - cust=3\n"))
	lines := waitLines(t, out, 3, time.Minute)
	select {
	case err := <-r.done:
		t.Fatalf("Run returned before drain_delay was over (after %v): %v", time.Since(began), err)
	default:
	}
	if since := time.Since(began); since >= 8*time.Second {
		t.Fatalf("the checks took %v, longer than drain_delay: nothing was shown", since)
	}
	if readyz() != http.StatusServiceUnavailable {
		t.Fatal("ready again during drain_delay")
	}
	for i, l := range lines {
		m := decode(t, l)
		if get(m, "c.Email") != fmt.Sprintf("u%s@v1.example", get(m, "cust")) {
			t.Fatalf("line %d not enriched: %s", i, l)
		}
	}
	c.Close()
	c2.Close()
	select {
	case err := <-r.done:
		must(t, err)
	case <-time.After(time.Minute):
		t.Fatal("the drain did not end")
	}
	if took := time.Since(began); took < 8*time.Second {
		t.Fatalf("Run returned %v after the signal, before drain_delay", took)
	}
	r.cancel = nil // stopped
}
