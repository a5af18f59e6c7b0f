package serve_test

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lutkit/lutkit/enrichd"
)

// TestDaemonMemcachedLimitsAndMetrics runs enrichd with memcached.max_connections
// and memcached.idle_timeout and reads the listener's metrics.
func TestDaemonMemcachedLimitsAndMetrics(t *testing.T) {
	dir := t.TempDir()
	writeTable(t, dir)
	cfg, err := enrichd.ParseConfig(filepath.Join(dir, "enrichd.yaml"), []byte(`
tables: {path: .}
http: {listen: "127.0.0.1:0"}
memcached: {listen: "127.0.0.1:0", default_table: customers, max_connections: 1, idle_timeout: 1h}
drain_read_grace: 50ms
`))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Memcached.Conn.Limits.MaxConnections != 1 || cfg.Memcached.Conn.Limits.IdleTimeout != time.Hour {
		t.Fatalf("%+v", cfg.Memcached)
	}
	d, err := enrichd.New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	addr := d.MemcachedAddr().String()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(c)
	if _, err := c.Write([]byte("set customers:1 0 0 1 noreply\r\nx\r\nget 1 customers:2 nope\r\nmg 1 v\r\n")); err != nil {
		t.Fatal(err)
	}
	var got strings.Builder
	for range 7 {
		l, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("%v after %q", err, got.String())
		}
		got.WriteString(l)
	}
	if !strings.Contains(got.String(), `"Acme"`) || !strings.Contains(got.String(), `"Globex"`) || !strings.HasPrefix(got.String(), "VALUE 1 ") {
		t.Errorf("%q", got.String())
	}
	// The cap: a second connection is refused.
	c2, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if err := c2.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if l, err := bufio.NewReader(c2).ReadString('\n'); l != "ERROR Too many open connections\r\n" {
		t.Errorf("second connection: %q %v", l, err)
	}
	for sample, want := range map[string]float64{
		`enrichd_listener_connections_total{listener="memcached",tls="false"}`:                      2,
		`enrichd_listener_connections_refused_total{listener="memcached",reason="max_connections"}`: 1,
		`enrichd_listener_connections_active{listener="memcached"}`:                                 1,
		`enrichd_listener_connections_idle_closed_total{listener="memcached"}`:                      0,
		`enrichd_memcached_requests_total{protocol="text"}`:                                         2,
		`enrichd_memcached_requests_total{protocol="meta"}`:                                         1,
		`enrichd_memcached_requests_total{protocol="binary"}`:                                       0,
		`enrichd_memcached_writes_refused_total{protocol="text"}`:                                   1,
		`enrichd_memcached_writes_refused_total{protocol="binary"}`:                                 0,
		`enrichd_memcached_lookups_total{result="hit"}`:                                             3,
		`enrichd_memcached_lookups_total{result="miss"}`:                                            1,
	} {
		if v, ok := scrape(t, "http://"+d.HTTPAddr().String()+"/metrics", sample); !ok || v != want {
			t.Errorf("%s = %v (found %v), want %v", sample, v, ok, want)
		}
	}
}

func TestConfigMemcachedLimits(t *testing.T) {
	_, err := enrichd.ParseConfig("enrichd.yaml", []byte(`
tables: {path: .}
memcached: {listen: "127.0.0.1:11211", max_connections: 0, idle_timeout: soon}
`))
	for _, want := range []string{"enrichd.yaml:3:", "memcached.max_connections: must be a positive integer", "memcached.idle_timeout: must be a duration"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v lacks %q", err, want)
		}
	}
}

// scrape returns the value of one sample of a Prometheus endpoint.
func scrape(t *testing.T, url, sample string) (float64, bool) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, l := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(l, sample+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return f, err == nil
		}
	}
	return 0, false
}
