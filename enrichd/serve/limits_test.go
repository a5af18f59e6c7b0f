package serve_test

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lutkit/lutkit/enrichd"
	"github.com/lutkit/lutkit/internal/testpki"
)

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// sample reads one sample of the daemon's /metrics.
func sample(t *testing.T, d *enrichd.Daemon, name string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + d.HTTPAddr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, name+" "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	return 0
}

// waitSample waits until a sample reaches want.
func waitSample(t *testing.T, d *enrichd.Daemon, name string, want float64) {
	t.Helper()
	var v float64
	for end := time.Now().Add(60 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if v = sample(t, d, name); v >= want {
			return
		}
	}
	t.Fatalf("%s is %v, want %v", name, v, want)
}

// TestConnectionFlood makes 10,000 connection attempts against a tcp
// input capped at 1,000 while a lookup is asked over HTTP
// every 10 ms: the cap holds, the 9,000 others are refused and counted,
// and every lookup is answered: the median within 100 ms and none after
// 2 s. These are functional bounds with a wide margin for a loaded
// 2-core machine that runs the flood's clients too (a lookup alone takes
// well under a millisecond); the measured figures are logged.
func TestConnectionFlood(t *testing.T) {
	const attempts, capN = 10_000, 1_000
	dir := t.TempDir()
	d := runDaemon(t, dir, fmt.Sprintf(`
inputs: [{name: tcp, type: tcp, listen: "127.0.0.1:0", limits: {max_connections: %d}}]
outputs: [{type: file, path: %q}]
tables: {path: .}
http: {listen: "127.0.0.1:0"}
drain_read_grace: 50ms
`, capN, filepath.Join(dir, "out.json")))
	addr := d.Addr("tcp").String()
	lookup := "http://" + d.HTTPAddr().String() + "/v1/tables/customers/1"
	client := &http.Client{Timeout: 30 * time.Second}

	stop := make(chan struct{})
	var lat []time.Duration
	var lookupErr error
	lookups := make(chan struct{})
	go func() {
		defer close(lookups)
		for {
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
			start := time.Now()
			resp, err := client.Get(lookup)
			if err != nil {
				lookupErr = err
				return
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "Acme") {
				lookupErr = fmt.Errorf("lookup: %d %s", resp.StatusCode, body)
				return
			}
			lat = append(lat, time.Since(start))
		}
	}()

	// The first 1,000 connections are held open; each of the 9,000 after
	// them must be closed by enrichd (the client reads EOF) and is closed
	// then, so the test holds few descriptors beyond the cap.
	var mu sync.Mutex
	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	var failures []string
	fail := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if len(failures) < 10 {
			failures = append(failures, fmt.Sprintf(format, args...))
		}
	}
	parallel := func(n int, attempt func()) {
		var wg sync.WaitGroup
		for w := range 50 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; i < n; i += 50 {
					attempt()
				}
			}()
		}
		wg.Wait()
	}
	parallel(capN, func() {
		c, err := net.DialTimeout("tcp", addr, 30*time.Second)
		if err != nil {
			fail("dial: %v", err)
			return
		}
		mu.Lock()
		held = append(held, c)
		mu.Unlock()
	})
	waitSample(t, d, `enrichd_listener_connections_active{listener="input:tcp"}`, capN)
	parallel(attempts-capN, func() {
		c, err := net.DialTimeout("tcp", addr, 30*time.Second)
		if err != nil {
			fail("dial: %v", err)
			return
		}
		defer c.Close()
		_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
		if n, err := c.Read(make([]byte, 1)); n > 0 || err == nil || isTimeout(err) {
			fail("a connection over the cap was not closed: %d %v", n, err)
		}
	})
	if len(failures) > 0 {
		t.Fatalf("connection attempts: %s", strings.Join(failures, "; "))
	}
	waitSample(t, d, `enrichd_listener_connections_total{listener="input:tcp",tls="false"}`, attempts)
	waitSample(t, d, `enrichd_listener_connections_refused_total{listener="input:tcp",reason="max_connections"}`, attempts-capN)
	if v := sample(t, d, `enrichd_listener_connections_active{listener="input:tcp"}`); v != capN {
		t.Errorf("active connections %v, want %d", v, capN)
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	close(stop)
	<-lookups
	if lookupErr != nil {
		t.Fatal(lookupErr)
	}
	if len(lat) < 10 {
		t.Fatalf("only %d lookups during the flood", len(lat))
	}
	slices.Sort(lat)
	med, p99, worst := lat[len(lat)/2], lat[len(lat)*99/100], lat[len(lat)-1]
	t.Logf("%d lookups during %d connection attempts: median %v, p90 %v, p99 %v, max %v; heap in use %d MiB (daemon and clients)",
		len(lat), attempts, med, lat[len(lat)*9/10], p99, worst, ms.HeapInuse>>20)
	if med > 100*time.Millisecond || worst > 2*time.Second {
		t.Errorf("lookups during the flood: median %v (bound 100 ms), max %v (bound 2 s)", med, worst)
	}
	// The held connections cost little: well within a 256 MiB budget.
	if ms.HeapInuse > 256<<20 {
		t.Errorf("heap in use %d MiB during the flood", ms.HeapInuse>>20)
	}
}

// TestMemcachedBounds: an idle memcached client is closed at idle_timeout
// and a source over max_connections_per_source is refused, both counted
// in /metrics.
func TestMemcachedBounds(t *testing.T) {
	dir := t.TempDir()
	d := runDaemon(t, dir, `
tables: {path: .}
http: {listen: "127.0.0.1:0"}
memcached: {listen: "127.0.0.1:0", default_table: customers, limits: {idle_timeout: 1s, max_connections_per_source: 3}}
`)
	addr := d.MemcachedAddr().String()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	_ = c.SetReadDeadline(time.Now().Add(60 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatal("idle client got an answer")
	}
	if took := time.Since(start); took < 900*time.Millisecond {
		t.Errorf("idle client closed after %v, before idle_timeout", took)
	}
	waitSample(t, d, `enrichd_listener_connections_idle_closed_total{listener="memcached"}`, 1)

	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	for i := range 4 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
		_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
		if i == 3 {
			// Told why, as memcached tells a connection over its cap,
			// then closed.
			b, err := io.ReadAll(c)
			if string(b) != "ERROR Too many open connections\r\n" || err != nil {
				t.Fatalf("fourth connection from one source: %q %v", b, err)
			}
			break
		}
		fmt.Fprintf(c, "get 1\r\n")
		b := make([]byte, 512)
		n, err := c.Read(b)
		if err != nil || !strings.HasPrefix(string(b[:n]), "VALUE 1 ") {
			t.Fatalf("connection %d: %q %v", i, b[:n], err)
		}
	}
	waitSample(t, d, `enrichd_listener_connections_refused_total{listener="memcached",reason="max_connections_per_source"}`, 1)
}

// TestMemcachedTLS: the memcached listener over TLS with client
// certificates answers openssl s_client with the right certificate and
// refuses one without, counted.
func TestMemcachedTLS(t *testing.T) {
	dir := t.TempDir()
	ca := testpki.NewCA(t, "ca")
	srv, client := ca.Server(t, "enrichd"), ca.Client(t, "lookup-client")
	d := runDaemon(t, dir, fmt.Sprintf(`
tables: {path: .}
http: {listen: "127.0.0.1:0"}
memcached: {listen: "127.0.0.1:0", default_table: customers, tls: {cert_file: %q, key_file: %q, client_ca_file: %q}}
`, srv.CertFile, srv.KeyFile, ca.CertFile))
	ossl := tool(t, "openssl")
	addr := d.MemcachedAddr().String()
	run := func(args ...string) string {
		cmd := exec.Command(ossl, append([]string{"s_client", "-connect", addr, "-quiet", "-CAfile", ca.CertFile}, args...)...)
		cmd.Stdin = strings.NewReader("get 1\r\nquit\r\n")
		out, _ := cmd.CombinedOutput()
		return string(out)
	}
	if out := run("-cert", client.CertFile, "-key", client.KeyFile); !strings.Contains(out, `VALUE 1 0 40`+"\r\n"+`{"cust":"1","name":"Acme","tier":"gold"}`) {
		t.Errorf("with a certificate: %s", out)
	}
	if out := run(); strings.Contains(out, "VALUE") {
		t.Errorf("without a certificate: %s", out)
	}
	waitSample(t, d, `enrichd_listener_connections_refused_total{listener="memcached",reason="no_client_cert"}`, 1)
}
