package listen

import (
	"crypto/tls"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/lutkit/lutkit/internal/syncbuf"
	"github.com/lutkit/lutkit/internal/testpki"
)

// serveEcho accepts on l and writes each connection's identity, then
// echoes it.
func serveEcho(t *testing.T, l *Listener) {
	t.Helper()
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				id, _ := Identity(c)
				_, _ = io.WriteString(c, "id="+id+"\n")
				_, _ = io.Copy(c, c)
			}()
		}
	}()
}

func listen(t *testing.T, o Options) *Listener {
	t.Helper()
	l, err := Listen("127.0.0.1:0", o)
	if err != nil {
		t.Fatal(err)
	}
	serveEcho(t, l)
	return l
}

// waitFor polls cond for up to 20 seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

func refused(l *Listener, reason string) uint64 {
	s := l.Stats()
	for i, r := range Reasons {
		if r == reason {
			return s.Refused[i]
		}
	}
	panic(reason)
}

// readLine reads the greeting line of a connection.
func readLine(c net.Conn) (string, error) {
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
	var b []byte
	one := make([]byte, 1)
	for {
		if _, err := c.Read(one); err != nil {
			return string(b), err
		}
		if one[0] == '\n' {
			return string(b), nil
		}
		b = append(b, one[0])
	}
}

func TestCapsPerListenerAndSource(t *testing.T) {
	l := listen(t, Options{Name: "t", Limits: Limits{MaxConnections: 3, MaxConnectionsPerSource: 2}})
	addr := l.Addr().String()
	var open []net.Conn
	defer func() {
		for _, c := range open {
			c.Close()
		}
	}()
	dial := func(local string) net.Conn {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
		c, err := d.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	// Two from 127.0.0.1 are served; the third is refused per source.
	for range 2 {
		c := dial("127.0.0.1")
		if _, err := readLine(c); err != nil {
			t.Fatal(err)
		}
		open = append(open, c)
	}
	c := dial("127.0.0.1")
	if _, err := readLine(c); err == nil {
		t.Fatal("third connection from one source served")
	}
	c.Close()
	waitFor(t, "per-source refusal", func() bool { return refused(l, ReasonMaxPerSource) == 1 })
	// Another source gets the last slot; then the listener is full.
	c = dial("127.0.0.2")
	if _, err := readLine(c); err != nil {
		t.Fatal(err)
	}
	open = append(open, c)
	c = dial("127.0.0.3")
	if _, err := readLine(c); err == nil {
		t.Fatal("connection over max_connections served")
	}
	c.Close()
	waitFor(t, "max_connections refusal", func() bool { return refused(l, ReasonMaxConnections) == 1 })
	// Closing one frees its slot.
	open[0].Close()
	open = open[1:]
	waitFor(t, "a slot freed", func() bool { return l.Stats().Active == 2 })
	c = dial("127.0.0.1")
	if _, err := readLine(c); err != nil {
		t.Fatal(err)
	}
	open = append(open, c)
}

func TestTLSIdentityAndRefusals(t *testing.T) {
	ca := testpki.NewCA(t, "ca")
	srv := ca.Server(t, "enrichd")
	good := ca.Client(t, "sender-a")
	other := ca.Client(t, "sender-b")
	stranger := testpki.NewCA(t, "stranger").Client(t, "sender-a")
	l := listen(t, Options{Name: "tls", TLS: &TLS{CertFile: srv.CertFile, KeyFile: srv.KeyFile, ClientCAFile: ca.CertFile,
		AllowedClients: []string{"sender-a"}}, Limits: Limits{HandshakeTimeout: 2 * time.Second}})
	addr := l.Addr().String()
	dial := func(cert *testpki.Pair, maxVer uint16) (string, error) {
		cfg := &tls.Config{RootCAs: ca.Pool(), ServerName: "127.0.0.1", MinVersion: tls.VersionTLS10, MaxVersion: maxVer}
		if cert != nil {
			// Sent even when its CA is not one the server names.
			kp := cert.TLS(t)
			cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &kp, nil }
		}
		c, err := tls.DialWithDialer(&net.Dialer{Timeout: 20 * time.Second}, "tcp", addr, cfg)
		if err != nil {
			return "", err
		}
		defer c.Close()
		return readLine(c)
	}
	for _, v := range []uint16{tls.VersionTLS12, tls.VersionTLS13} {
		id, err := dial(good, v)
		if err != nil || id != "id=CN=sender-a,O=lutkit test" {
			t.Fatalf("TLS %x: got %q, %v", v, id, err)
		}
	}
	cases := []struct {
		name   string
		cert   *testpki.Pair
		ver    uint16
		reason string
	}{
		{"no certificate", nil, 0, ReasonNoClientCert},
		{"another CA's", stranger, 0, ReasonBadClientCert},
		{"not allowed", other, 0, ReasonClientNotAllowed},
		{"TLS 1.1", good, tls.VersionTLS11, ReasonHandshake},
		// A server's certificate lacks the client auth key usage.
		{"a server certificate", ca.Server(t, "sender-a"), 0, ReasonBadClientCert},
	}
	for _, tc := range cases {
		before := refused(l, tc.reason)
		if id, err := dial(tc.cert, tc.ver); err == nil {
			t.Errorf("%s: served (%q)", tc.name, id)
		}
		waitFor(t, tc.name+" counted", func() bool { return refused(l, tc.reason) == before+1 })
	}
	// A client that rejects the server's certificate (it trusts another
	// CA).
	before := refused(l, ReasonHandshake)
	if _, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: testpki.NewCA(t, "other").Pool(), ServerName: "127.0.0.1"}); err == nil {
		t.Error("a client trusting another CA accepted the server")
	}
	waitFor(t, "the client's rejection counted", func() bool { return refused(l, ReasonHandshake) == before+1 })
	// Plaintext to the TLS port.
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.WriteString(c, "<13>1 2026-01-01T00:00:00Z h a - - - plaintext\n")
	if _, err := readLine(c); err == nil {
		t.Error("plaintext served")
	}
	c.Close()
	waitFor(t, "plaintext counted", func() bool { return refused(l, ReasonNotTLS) == 1 })
	// A client that says nothing is closed at the handshake timeout.
	c, err = net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil || time.Since(start) < time.Second {
		t.Errorf("silent client: %v after %v", err, time.Since(start))
	}
	waitFor(t, "handshake timeout counted", func() bool { return refused(l, ReasonHandshakeTimeout) == 1 })
	waitFor(t, "every slot freed", func() bool { return l.Stats().Active == 0 })
}

func TestCertificateReload(t *testing.T) {
	ca := testpki.NewCA(t, "ca")
	first, second := ca.Server(t, "first"), ca.Server(t, "second")
	dir := t.TempDir()
	certFile, keyFile := dir+"/server.pem", dir+"/server-key.pem"
	put := func(p *testpki.Pair) {
		for f, b := range map[string][]byte{certFile: p.CertPEM, keyFile: p.KeyPEM} {
			if err := os.WriteFile(f+".tmp", b, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(f+".tmp", f); err != nil {
				t.Fatal(err)
			}
		}
	}
	put(first)
	l := listen(t, Options{Name: "tls", TLS: &TLS{CertFile: certFile, KeyFile: keyFile}})
	served := func() string {
		c, err := tls.Dial("tcp", l.Addr().String(), &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost"})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := readLine(c); err != nil {
			t.Fatal(err)
		}
		return c.ConnectionState().PeerCertificates[0].Subject.CommonName
	}
	if cn := served(); cn != "first" {
		t.Fatalf("served %q", cn)
	}
	// Changed files are read again on a new connection.
	put(second)
	waitFor(t, "the new certificate served", func() bool { return served() == "second" })
	// A broken pair keeps the last good one.
	if err := os.WriteFile(keyFile, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	l.Reload()
	if cn := served(); cn != "second" {
		t.Fatalf("after a failed reload: served %q", cn)
	}
	if s := l.Stats(); s.CertReloadFailures == 0 || s.CertLoads < 2 {
		t.Errorf("stats %+v", s)
	}
	// Reload (SIGHUP) reads them at once.
	put(first)
	l.Reload()
	if cn := served(); cn != "first" {
		t.Fatalf("after Reload: served %q", cn)
	}
}

// syncBuffer is a log destination the listener's goroutines write to.
type syncBuffer = syncbuf.Buffer

// TestRefusalLogBounded: a burst of refusals is counted in full but
// logged once a second, the next line saying how many were left out.
func TestRefusalLogBounded(t *testing.T) {
	var logs syncBuffer
	l := listen(t, Options{Name: "t", Limits: Limits{MaxConnections: 1},
		Log: slog.New(slog.NewTextHandler(&logs, nil))})
	held, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if _, err := readLine(held); err != nil {
		t.Fatal(err)
	}
	const burst = 50
	for range burst {
		c, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
	}
	waitFor(t, "the burst counted", func() bool { return refused(l, ReasonMaxConnections) == burst })
	lines := strings.Count(logs.String(), "connection refused")
	if lines < 1 || lines >= burst/2 {
		t.Fatalf("%d log lines for %d refusals:\n%s", lines, burst, logs.String())
	}
	// A second later, the next refusal is logged with the count left out.
	time.Sleep(1100 * time.Millisecond)
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	waitFor(t, "the next refusal logged", func() bool {
		return strings.Count(logs.String(), "connection refused") == lines+1
	})
	if !strings.Contains(logs.String(), "not_logged_since_last=") {
		t.Errorf("no count of the refusals not logged:\n%s", logs.String())
	}
}
