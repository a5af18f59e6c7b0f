package enrichd

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lutkit/lutkit/internal/testfiles"
	"github.com/lutkit/lutkit/internal/testpki"
)

// tlsTestConfig is a daemon with a TLS tcp input (tlsYAML is its tls:
// block), the customers rule and tls.client.subject in the output.
func tlsTestConfig(t *testing.T, dir, tlsYAML string) *Config {
	t.Helper()
	buildCustomers(t, filepath.Join(dir, "customers.lut"), 1000, 1)
	yml := fmt.Sprintf(`
inputs:
  - {name: tls, type: tcp, listen: "127.0.0.1:0", tls: %s, limits: {handshake_timeout: 5s}}
tables: {path: %q}
rules:
  - {name: customer, table: customers, field: cust, target: customer, columns: ["Customer Id"]}
pipeline: {tls_client: true}
outputs:
  - {type: file, path: %q}
http: {listen: "127.0.0.1:0"}
drain_read_grace: 300ms
`, tlsYAML, dir, filepath.Join(dir, "out.json"))
	cfg, err := ParseConfig(filepath.Join(dir, "enrichd.yaml"), []byte(yml))
	if err != nil {
		t.Fatalf("%v\n%s", err, yml)
	}
	return cfg
}

// opensslSend sends data with `openssl s_client` and returns its output;
// it ends when the input is sent and the server has closed or answered.
func opensslSend(t *testing.T, addr string, data []byte, args ...string) (string, error) {
	t.Helper()
	bin, err := exec.LookPath("openssl")
	if err != nil {
		testfiles.Missing(t, "openssl (Debian package openssl)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"s_client", "-connect", addr, "-quiet", "-no_ign_eof"}, args...)...)
	cmd.Stdin = bytes.NewReader(data)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// seqMessages returns n messages "seq=I cust=C" from first, octet-counted
// or newline framed.
func seqMessages(first, n int, octets bool) []byte {
	var b bytes.Buffer
	for i := first; i < first+n; i++ {
		msg := fmt.Sprintf("<13>1 2026-01-01T00:00:00Z host app - - - seq=%d cust=%d", i, i%1000+1)
		if octets {
			fmt.Fprintf(&b, "%d %s", len(msg), msg)
		} else {
			b.WriteString(msg + "\n")
		}
	}
	return b.Bytes()
}

// TestTLSInputOpenSSL sends syslog over TLS with openssl s_client, in
// both framings, with the right client certificate; sends with none, with
// one of another CA, with one not allowed, with TLS 1.1 and in plaintext,
// which are refused and counted; and checks that every event arrives once
// carrying its sender's identity.
func TestTLSInputOpenSSL(t *testing.T) {
	dir := t.TempDir()
	ca := testpki.NewCA(t, "ca")
	srv := ca.Server(t, "enrichd")
	good, other := ca.Client(t, "sender-a"), ca.Client(t, "sender-b")
	stranger := testpki.NewCA(t, "stranger").Client(t, "sender-a")
	cfg := tlsTestConfig(t, dir, fmt.Sprintf("{cert_file: %q, key_file: %q, client_ca_file: %q, allowed_clients: [sender-a]}",
		srv.CertFile, srv.KeyFile, ca.CertFile))
	r := startDaemon(t, cfg)
	addr := r.d.Addr("tls").String()
	const n = 2000
	certArgs := func(p *testpki.Pair) []string {
		return []string{"-CAfile", ca.CertFile, "-verify_return_error", "-cert", p.CertFile, "-key", p.KeyFile}
	}
	for i, octets := range []bool{true, false} {
		if out, err := opensslSend(t, addr, seqMessages(i*n, n, octets), certArgs(good)...); err != nil {
			t.Fatalf("openssl s_client (octet counting %v): %v\n%s", octets, err, out)
		}
	}
	waitLines(t, r.out, 2*n, 60*time.Second)
	refusals := []struct {
		name   string
		args   []string
		reason string
	}{
		{"no certificate", []string{"-CAfile", ca.CertFile}, "no_client_cert"},
		{"another CA's certificate", certArgs(stranger), "bad_client_cert"},
		{"a certificate not allowed", certArgs(other), "client_not_allowed"},
		{"TLS 1.1", append(certArgs(good), "-tls1_1", "-cipher", "DEFAULT@SECLEVEL=0"), "handshake_failed"},
	}
	sample := func(reason string) string {
		return fmt.Sprintf(`enrichd_listener_connections_refused_total{listener="input:tls",reason=%q}`, reason)
	}
	for _, rf := range refusals {
		out, _ := opensslSend(t, addr, seqMessages(9*n, 10, false), rf.args...)
		needMetric(t, r.d, sample(rf.reason), 1, rf.name+"\n"+out)
	}
	// Plaintext to the TLS port.
	c := dialTCP(t, r.d, "tls")
	_, _ = c.Write(seqMessages(9*n, 10, false))
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Error("plaintext connection answered")
	}
	c.Close()
	needMetric(t, r.d, sample("not_tls"), 1, "plaintext")

	time.Sleep(300 * time.Millisecond)
	lines := readLines(t, r.out)
	checkExactlyOnce(t, lines, 2*n, 1000)
	for _, l := range lines {
		if got := get(decode(t, l), "tls.client.subject"); got != "CN=sender-a,O=lutkit test" {
			t.Fatalf("tls.client.subject %v: %s", got, l)
		}
	}
	if v := metric(t, r.d, `enrichd_listener_connections_total{listener="input:tls",tls="true"}`); v < 7 {
		t.Errorf("listener_connections_total %v, want 7 or more", v)
	}
}

// needMetric waits until a sample of /metrics reaches want, or fails.
func needMetric(t *testing.T, d *Daemon, sample string, want float64, what string) {
	t.Helper()
	if v := waitMetric(t, d, sample, want); v < want {
		t.Fatalf("%s: %s is %v, want %v", what, sample, v, want)
	}
}

// TestTLSConfigErrors: a TLS block that cannot work is refused at load,
// naming the file, line and field.
func TestTLSConfigErrors(t *testing.T) {
	dir := t.TempDir()
	ca := testpki.NewCA(t, "ca")
	srv := ca.Server(t, "enrichd")
	notPEM := filepath.Join(dir, "ca.txt")
	_ = os.WriteFile(notPEM, []byte("not a certificate\n"), 0o600)
	yml := fmt.Sprintf(`inputs:
  - {type: tcp, listen: "127.0.0.1:0", tls: {key_file: %q}}
  - {type: tcp, listen: "127.0.0.1:0", tls: {cert_file: %q, key_file: %q, client_ca_file: %q, min_version: "1.1"}}
  - {type: tcp, listen: "127.0.0.1:0", tls: {cert_file: %q, key_file: %q, allowed_clients: [a]}, max_connections: 5, limits: {max_connections: 6}}
  - {type: tcp, listen: "127.0.0.1:0", tls: {cert_file: %q, key_file: %q}, limits: {max_connections_per_source: -1, handshake: 1s}}
  - {type: udp, listen: "127.0.0.1:0", tls: {}}
outputs: [{type: stdout}]
`, srv.KeyFile, srv.CertFile, srv.KeyFile, notPEM, srv.CertFile, srv.KeyFile, srv.KeyFile, srv.CertFile)
	_, err := ParseConfig(filepath.Join(dir, "e.yaml"), []byte(yml))
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		"e.yaml:2:", "inputs[0].tls.cert_file: required",
		"inputs[1].tls.client_ca_file: " + notPEM + " holds no PEM certificate",
		`inputs[1].tls.min_version: must be "1.2" or "1.3", not "1.1"`,
		"inputs[2].tls.allowed_clients: needs client_ca_file",
		"inputs[2].max_connections: given here and in limits",
		"inputs[3].tls.cert_file:",
		"inputs[3].limits.handshake: unknown field",
		"inputs[3].limits.max_connections_per_source: must be",
		"inputs[4].tls: only for relp and tcp inputs",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in\n%v", want, err)
		}
	}
}

// TestTLSCertificateRotation replaces the server certificate files while
// senders stream: a connection open across the replacement keeps going,
// connections made after it get the new certificate (read when the files
// change, and again on Reopen, the daemon's SIGHUP), and every event
// arrives once.
func TestTLSCertificateRotation(t *testing.T) {
	dir := t.TempDir()
	ca := testpki.NewCA(t, "ca")
	first, second, third := ca.Server(t, "first"), ca.Server(t, "second"), ca.Server(t, "third")
	certFile, keyFile := filepath.Join(dir, "server.pem"), filepath.Join(dir, "server-key.pem")
	install := func(p *testpki.Pair) {
		// As a certificate manager does: each file written aside, then
		// renamed over the old one.
		for f, b := range map[string][]byte{keyFile: p.KeyPEM, certFile: p.CertPEM} {
			if err := os.WriteFile(f+".new", b, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(f+".new", f); err != nil {
				t.Fatal(err)
			}
		}
	}
	install(first)
	r := startDaemon(t, tlsTestConfig(t, dir, fmt.Sprintf("{cert_file: %q, key_file: %q}", certFile, keyFile)))
	addr := r.d.Addr("tls").String()
	cfg := &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost"}

	// A long connection, open across both replacements.
	long, err := tls.Dial("tcp", addr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	seq := 0
	send := func(c *tls.Conn, n int) {
		t.Helper()
		if _, err := c.Write(seqMessages(seq, n, true)); err != nil {
			t.Fatal(err)
		}
		seq += n
	}
	// connect sends 100 events on a new connection and returns the
	// common name of the certificate it was served.
	connect := func() string {
		t.Helper()
		c, err := tls.Dial("tcp", addr, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		send(c, 100)
		return c.ConnectionState().PeerCertificates[0].Subject.CommonName
	}
	send(long, 500)
	if cn := connect(); cn != "first" {
		t.Fatalf("served %q before the replacement", cn)
	}
	install(second)
	var served []string
	for end := time.Now().Add(30 * time.Second); ; {
		send(long, 100)
		cn := connect()
		served = append(served, cn)
		if cn == "second" {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("the replaced certificate is not served after 30 s: %v", served)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Reopen (SIGHUP) reads them at once.
	install(third)
	r.d.Reopen()
	if cn := connect(); cn != "third" {
		t.Errorf("served %q after Reopen, want third", cn)
	}
	send(long, 500)
	if cn := long.ConnectionState().PeerCertificates[0].Subject.CommonName; cn != "first" {
		t.Errorf("the long connection's certificate changed to %q", cn)
	}
	long.Close()
	waitLines(t, r.out, seq, 60*time.Second)
	time.Sleep(300 * time.Millisecond)
	lines := readLines(t, r.out)
	checkExactlyOnce(t, lines, seq, 1000)
	t.Logf("%d events over %d connections; served before the new certificate: %v", seq, len(served)+3, served)
}

// TestSecurityExampleConfig: the hardened example of docs/enrichd.md is a
// valid configuration (its certificate files made by the test).
func TestSecurityExampleConfig(t *testing.T) {
	doc, err := os.ReadFile("../docs/enrichd.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "### Hardened example\n\n```yaml\n")
	yml, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("no hardened example in docs/enrichd.md")
	}
	dir := t.TempDir()
	ca := testpki.NewCA(t, "ca")
	srv := ca.Server(t, "enrichd")
	files := map[string][]byte{"server.pem": srv.CertPEM, "server-key.pem": srv.KeyPEM, "senders-ca.pem": ca.CertPEM,
		"clients-ca.pem": ca.CertPEM, "api-token": []byte("t0k\n")}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	yml = strings.ReplaceAll(yml, "/etc/enrichd/tls/", dir+"/")
	yml = strings.ReplaceAll(yml, "/etc/enrichd/", dir+"/")
	cfg, err := ParseConfig(filepath.Join(dir, "enrichd.yaml"), []byte(yml))
	if err != nil {
		t.Fatalf("%v\n%s", err, yml)
	}
	in := cfg.Inputs[0].Settings.(*TCPInputConfig)
	if in.TLS.MinVersion != "1.3" || in.Limits.MaxConnectionsPerSource != 20 || !cfg.Pipeline.TLSClient ||
		cfg.HTTP.Token != "t0k" || cfg.HTTP.Conn.TLS.ClientAuth != "optional" || cfg.Memcached.Conn.Limits.IdleTimeout != 5*time.Minute {
		t.Errorf("example read as %+v %+v %+v", in, cfg.HTTP, cfg.Memcached)
	}
}

// TestListenerDefaults: the defaults docs/enrichd.md (Security) gives.
func TestListenerDefaults(t *testing.T) {
	cfg, err := ParseConfig("enrichd.yaml", []byte(`
inputs: [{type: tcp, listen: "127.0.0.1:0"}]
outputs: [{type: stdout}]
tables: {path: .}
http: {listen: "127.0.0.1:0"}
memcached: {listen: "127.0.0.1:0"}
`))
	if err != nil {
		t.Fatal(err)
	}
	in := cfg.Inputs[0].Settings.(*TCPInputConfig).Limits
	h, m := cfg.HTTP, cfg.Memcached.Conn.Limits
	for _, c := range []struct {
		name      string
		got, want any
	}{
		{"tcp max_connections", in.MaxConnections, 4096},
		{"tcp idle_timeout", in.IdleTimeout, time.Duration(0)},
		{"tcp handshake_timeout", in.HandshakeTimeout, 10 * time.Second},
		{"tcp max_connections_per_source", in.MaxConnectionsPerSource, 0},
		{"http max_connections", h.Conn.Limits.MaxConnections, 1024},
		{"http idle_timeout", h.Conn.Limits.IdleTimeout, 2 * time.Minute},
		{"http handshake_timeout", h.Conn.Limits.HandshakeTimeout, 10 * time.Second},
		{"http read_header_timeout", h.ReadHeaderTimeout, 10 * time.Second},
		{"http request_timeout", h.RequestTimeout, time.Minute},
		{"http max_header_bytes", h.MaxHeaderBytes, 16 << 10},
		{"http max_body_bytes", h.MaxBodyBytes, 16 << 20},
		{"memcached max_connections", m.MaxConnections, 1024},
		{"memcached idle_timeout", m.IdleTimeout, time.Duration(0)},
		{"tls min_version", cfg.HTTP.Conn.TLS.MinVersion, "1.2"},
		{"tls client_auth", cfg.HTTP.Conn.TLS.ClientAuth, "required"},
	} {
		if c.got != c.want {
			t.Errorf("%s: %v, want %v", c.name, c.got, c.want)
		}
	}
}

// TestTLSShutdownDuringHandshake: a client that connected to a TLS input
// and stalls its handshake does not hold up the shutdown past
// drain_read_grace (handshake_timeout is longer than shutdown_timeout
// here: waiting for it timed the shutdown out). The events of a sender
// whose connection stays open are all out, once, and the stalled
// connection is refused as a handshake timeout.
func TestTLSShutdownDuringHandshake(t *testing.T) {
	dir := t.TempDir()
	ca := testpki.NewCA(t, "ca")
	srv := ca.Server(t, "enrichd")
	out := filepath.Join(dir, "out.json")
	yml := fmt.Sprintf(`
inputs:
  - {name: tls, type: tcp, listen: "127.0.0.1:0", tls: {cert_file: %q, key_file: %q}, limits: {handshake_timeout: 1m}}
tables: {path: %q}
outputs:
  - {type: file, path: %q}
http: {listen: "127.0.0.1:0"}
drain_read_grace: 300ms
shutdown_timeout: 5s
`, srv.CertFile, srv.KeyFile, dir, out)
	cfg, err := ParseConfig(filepath.Join(dir, "enrichd.yaml"), []byte(yml))
	if err != nil {
		t.Fatal(err)
	}
	r, logs := startDaemonLogged(t, cfg)
	const n = 100
	tc, err := tls.Dial("tcp", r.d.Addr("tls").String(), &tls.Config{RootCAs: ca.Pool(), ServerName: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	if _, err := tc.Write(seqMessages(0, n, true)); err != nil {
		t.Fatal(err)
	}
	waitLines(t, out, n, 30*time.Second)
	stalled := dialTCP(t, r.d, "tls") // connected; no ClientHello
	defer stalled.Close()
	needMetric(t, r.d, `enrichd_listener_connections_active{listener="input:tls"}`, 2, "both connections open")

	start := time.Now()
	r.cancel()
	r.cancel = nil
	select {
	case err := <-r.done:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the daemon did not stop")
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("the shutdown took %v with a handshake stalled, want about drain_read_grace (300ms)", took.Round(time.Millisecond))
	}
	seen := map[string]int{}
	for _, l := range readLines(t, out) {
		seen[fmt.Sprint(get(decode(t, l), "message"))]++
	}
	for i := range n {
		if c := seen[fmt.Sprintf("seq=%d cust=%d", i, i%1000+1)]; c != 1 {
			t.Errorf("seq %d written %d times, want once", i, c)
		}
	}
	if len(seen) != n {
		t.Errorf("%d distinct events written, want %d", len(seen), n)
	}
	if !strings.Contains(logs.String(), "reason=handshake_timeout") {
		t.Errorf("the stalled handshake was not refused as timed out:\n%s", logs.String())
	}
}
