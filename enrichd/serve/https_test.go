package serve_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lutkit/lutkit/enrichd"
	"github.com/lutkit/lutkit/internal/testfiles"
	"github.com/lutkit/lutkit/internal/testpki"
)

// runDaemon starts a daemon of the configuration yml (in dir, with the
// customers table) and stops it when the test ends.
func runDaemon(t *testing.T, dir, yml string) *enrichd.Daemon {
	t.Helper()
	writeTable(t, dir)
	cfg, err := enrichd.ParseConfig(filepath.Join(dir, "enrichd.yaml"), []byte(yml))
	if err != nil {
		t.Fatalf("%v\n%s", err, yml)
	}
	d, err := enrichd.New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Error(err)
			}
		case <-time.After(30 * time.Second):
			t.Error("daemon did not stop")
		}
	})
	return d
}

func tool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		testfiles.Missing(t, name+" (Debian package "+name+")")
	}
	return p
}

// curl runs curl and returns the HTTP status (0 when the connection
// failed) and the body.
func curl(t *testing.T, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, tool(t, "curl"), append([]string{"-sS", "-w", "\n%{http_code}"}, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	_ = cmd.Run()
	s := strings.TrimRight(out.String(), "\n")
	i := strings.LastIndexByte(s, '\n')
	code, _ := strconv.Atoi(s[i+1:])
	if i < 0 {
		return code, ""
	}
	return code, s[:i]
}

// metricValue reads one sample of /metrics through curl arguments args.
func metricValue(t *testing.T, sample string, args ...string) float64 {
	t.Helper()
	code, body := curl(t, args...)
	if code != 200 {
		t.Fatalf("/metrics: %d %s", code, body)
	}
	for _, l := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(l, sample+" "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	return 0
}

// TestHTTPSClientCertificates serves the lookup API over HTTPS with
// client certificates as an alternative to the bearer token, and /metrics
// with its own clients: curl and openssl s_client get 200 with the right
// certificate, 401 with none or another endpoint's, a refused handshake
// with another CA's; TLS 1.1 is refused; every refusal is counted.
func TestHTTPSClientCertificates(t *testing.T) {
	dir := t.TempDir()
	ca := testpki.NewCA(t, "ca")
	srv := ca.Server(t, "enrichd")
	lookup, scraper := ca.Client(t, "lookup-client"), ca.Client(t, "scraper")
	stranger := testpki.NewCA(t, "stranger").Client(t, "lookup-client")
	d := runDaemon(t, dir, fmt.Sprintf(`
tables: {path: .}
http:
  listen: "127.0.0.1:0"
  token: t0k
  api_clients: [lookup-client]
  metrics_token: m3t
  metrics_clients: [scraper]
  tls: {cert_file: %q, key_file: %q, client_ca_file: %q, client_auth: optional}
`, srv.CertFile, srv.KeyFile, ca.CertFile))
	base := "https://localhost:" + portOf(d.HTTPAddr())
	row := base + "/v1/tables/customers/2"
	cert := func(p *testpki.Pair) []string {
		return []string{"--cacert", ca.CertFile, "--cert", p.CertFile, "--key", p.KeyFile}
	}
	want := `{"cust":"2","name":"Globex","tier":"silver"}` + "\n"
	cases := []struct {
		name string
		args []string
		code int
	}{
		{"lookup client certificate", append(cert(lookup), row), 200},
		{"token, no certificate", []string{"--cacert", ca.CertFile, "-H", "Authorization: Bearer t0k", row}, 200},
		{"no certificate, no token", []string{"--cacert", ca.CertFile, row}, 401},
		{"metrics token on the API", []string{"--cacert", ca.CertFile, "-H", "Authorization: Bearer m3t", row}, 401},
		{"scraper certificate on the API", append(cert(scraper), row), 401},
		{"scraper certificate on /metrics", append(cert(scraper), base+"/metrics"), 200},
		{"metrics token on /metrics", []string{"--cacert", ca.CertFile, "-H", "Authorization: Bearer m3t", base + "/metrics"}, 200},
		{"lookup certificate on /metrics", append(cert(lookup), base+"/metrics"), 401},
		{"API token on /metrics", []string{"--cacert", ca.CertFile, "-H", "Authorization: Bearer t0k", base + "/metrics"}, 401},
		{"another CA's certificate", append(cert(stranger), row), 0},
		{"plain HTTP to the HTTPS port", []string{"http://127.0.0.1:" + portOf(d.HTTPAddr()) + "/healthz"}, 0},
	}
	for _, c := range cases {
		start := time.Now()
		code, body := curl(t, c.args...)
		t.Logf("%s: %d in %v", c.name, code, time.Since(start))
		if code != c.code || c.code == 200 && strings.HasSuffix(c.args[len(c.args)-1], "/2") && body != want {
			t.Errorf("%s: %d %q, want %d", c.name, code, body, c.code)
		}
	}
	// openssl s_client: a request by hand with the client certificate;
	// TLS 1.1 refused.
	ossl := tool(t, "openssl")
	addr := d.HTTPAddr().String()
	req := "GET /v1/tables/customers/1 HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
	cmd := exec.Command(ossl, "s_client", "-connect", addr, "-quiet", "-CAfile", ca.CertFile, "-verify_return_error",
		"-cert", lookup.CertFile, "-key", lookup.KeyFile)
	cmd.Stdin = strings.NewReader(req)
	out, err := cmd.CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("HTTP/1.1 200 OK")) || !bytes.Contains(out, []byte(`"name":"Acme"`)) {
		t.Errorf("openssl s_client GET: %v\n%s", err, out)
	}
	for _, v := range []string{"-tls1", "-tls1_1"} {
		cmd := exec.Command(ossl, "s_client", "-connect", addr, "-quiet", v, "-cipher", "DEFAULT@SECLEVEL=0", "-CAfile", ca.CertFile,
			"-cert", lookup.CertFile, "-key", lookup.KeyFile)
		cmd.Stdin = strings.NewReader(req)
		if out, err := cmd.CombinedOutput(); err == nil || bytes.Contains(out, []byte("HTTP/1.1")) {
			t.Errorf("openssl s_client %s: served: %v\n%s", v, err, out)
		}
	}
	m := append(cert(scraper), base+"/metrics")
	for reason, n := range map[string]float64{"bad_client_cert": 1, "not_tls": 1, "handshake_failed": 2} {
		sample := fmt.Sprintf(`enrichd_listener_connections_refused_total{listener="http",reason=%q}`, reason)
		if v := metricValue(t, sample, m...); v != n {
			t.Errorf("%s = %v, want %v", sample, v, n)
		}
	}
}

func portOf(a net.Addr) string {
	_, p, _ := net.SplitHostPort(a.String())
	return p
}

// TestHTTPBounds: a slowloris client (headers sent a line at a time,
// never ending) is closed at read_header_timeout; headers over
// max_header_bytes get 431 and a _batch body over max_body_bytes 413.
func TestHTTPBounds(t *testing.T) {
	dir := t.TempDir()
	d := runDaemon(t, dir, `
tables: {path: .}
http: {listen: "127.0.0.1:0", read_header_timeout: 1s, max_header_bytes: 4096, max_body_bytes: 64}
`)
	addr := d.HTTPAddr().String()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	_, _ = io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n")
	closed := make(chan time.Duration, 1)
	go func() {
		_, _ = io.Copy(io.Discard, c)
		closed <- time.Since(start)
	}()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	var took time.Duration
loop:
	for i := 0; ; i++ {
		select {
		case took = <-closed:
			break loop
		case <-tick.C:
			fmt.Fprintf(c, "X-Slow-%d: a\r\n", i)
			if time.Since(start) > 60*time.Second {
				t.Fatal("slowloris client still open after 60 s")
			}
		}
	}
	if took < 900*time.Millisecond {
		t.Errorf("slowloris client closed after %v, before read_header_timeout", took)
	}
	t.Logf("slowloris client closed after %v (read_header_timeout 1s)", took)

	big := strings.Repeat("a", 8192)
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/v1/tables", nil)
	req.Header.Set("X-Big", big)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("big headers: %d", resp.StatusCode)
	}
	resp, err = http.Post("http://"+addr+"/v1/tables/customers/_batch", "application/json", strings.NewReader(`["1","2","`+big+`"]`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("big body: %d", resp.StatusCode)
	}
}
