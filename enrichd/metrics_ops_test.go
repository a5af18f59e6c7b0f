package enrichd

import (
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/oschwald/maxminddb-golang/v2"

	"github.com/lutkit/lutkit/internal/testfiles"
)

// scrape returns the text of /metrics.
func scrape(t *testing.T, d *Daemon) string {
	t.Helper()
	resp, err := http.Get("http://" + d.HTTPAddr().String() + "/metrics")
	must(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	must(t, err)
	return string(b)
}

// TestOpsMetrics scrapes /metrics for the build, the latency of batches,
// the HTTP requests, the networks of an .mmdb table and one family of
// connection metrics.
func TestOpsMetrics(t *testing.T) {
	dir := t.TempDir()
	buildCustomers(t, filepath.Join(dir, "customers.lut"), 100, 1)
	out := filepath.Join(t.TempDir(), "out.json")
	r := startDaemon(t, testConfig(t, dir, out))
	base := "http://" + r.d.HTTPAddr().String()

	const n = 2000
	c := dialTCP(t, r.d, "tcp")
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "<13>1 - h app - - - seq=%d cust=%d src=81.2.69.160\n", i, i%100+1)
	}
	send(t, c, []byte(b.String()))
	waitLines(t, out, n, time.Minute)
	for _, p := range []string{"/readyz", "/readyz", "/v1/tables/customers/1", "/v1/tables/nosuch/1"} {
		resp, err := http.Get(base + p)
		must(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	// The networks of the .mmdb, as the MaxMind reader counts them.
	db, err := maxminddb.Open(testfiles.CityMMDB(t))
	must(t, err)
	networks := 0
	for range db.Networks() {
		networks++
	}
	nodes := db.Metadata.NodeCount
	db.Close()
	rows := `enrichd_table_rows{kind="mmdb",table="geo"}`
	for deadline := time.Now().Add(2 * time.Minute); !strings.Contains(scrape(t, r.d), rows+" "); {
		if time.Now().After(deadline) {
			t.Fatal("the networks of the .mmdb table were never counted")
		}
		time.Sleep(50 * time.Millisecond)
	}
	body := scrape(t, r.d)
	for _, want := range []string{
		fmt.Sprintf(`enrichd_build_info{commit="unknown",goversion=%q,version="dev"} 1`, runtime.Version()),
		`enrichd_http_requests_total{code="200",route="/readyz"} 2`,
		`enrichd_http_request_duration_seconds_count{code="200",route="/readyz"} 2`,
		`enrichd_http_requests_total{code="200",route="/v1/tables/{table}/{key}"} 1`,
		`enrichd_http_requests_total{code="404",route="/v1/tables/{table}/{key}"} 1`,
		`enrichd_table_rows{kind="lut",table="customers"} 100`,
		`enrichd_listener_connections_total{listener="input:tcp",tls="false"} 1`,
		`enrichd_listener_connections_active{listener="input:tcp"} 1`,
		`enrichd_listener_connections_idle_closed_total{listener="input:tcp"} 0`,
	} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if strings.Contains(body, "enrichd_connections_") || strings.Contains(body, "enrichd_memcached_connections_") {
		t.Errorf("a second family of connection metrics is exported")
	}
	// One latency observation per batch, not per event.
	count := metric(t, r.d, "enrichd_event_latency_seconds_count")
	sum := metric(t, r.d, "enrichd_event_latency_seconds_sum")
	if count < 1 || count > n/2 || sum <= 0 {
		t.Errorf("latency: %v observations summing %v s for %d events", count, sum, n)
	}
	if got := metric(t, r.d, rows); got != float64(networks) {
		t.Errorf("%s %v, want the %d networks", rows, got, networks)
	}
	if got := metric(t, r.d, `enrichd_table_mmdb_nodes{table="geo"}`); got != float64(nodes) {
		t.Errorf("nodes %v, want %d", got, nodes)
	}
	c.Close()
}

// TestLogDurations: NewLogger writes a duration as float seconds under
// its key with _seconds appended.
func TestLogDurations(t *testing.T) {
	var b strings.Builder
	NewLogger(&b, "info", "json").Info("x", "retry_in", 1500*time.Millisecond)
	NewLogger(&b, "info", "text").Info("y", "took", 250*time.Microsecond)
	if !strings.Contains(b.String(), `"retry_in_seconds":1.5`) || !strings.Contains(b.String(), "took_seconds=0.00025") {
		t.Fatal(b.String())
	}
}
