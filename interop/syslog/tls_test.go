package syslog

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lutkit/lutkit/internal/testpki"
)

// tlsEnrichd starts an enrichd whose one input is a TLS tcp input on a
// free port, requiring client certificates of ca (mTLS) with the subjects
// allowed, and writing tls.client.subject; it returns it and the input's
// address.
func tlsEnrichd(t *testing.T, name string, ca *testpki.CA, allowed ...string) (*enrichd, string) {
	t.Helper()
	srv := ca.Server(t, "enrichd")
	addr := "127.0.0.1:" + freePort(t)
	list, _ := json.Marshal(allowed)
	yml := fmt.Sprintf(`inputs:
  - name: tls
    type: tcp
    listen: %q
    tls: {cert_file: %q, key_file: %q, client_ca_file: %q, allowed_clients: %s}
pipeline: {original: true, tls_client: true}
`, addr, srv.CertFile, srv.KeyFile, ca.CertFile, list)
	return startEnrichdConfig(t, name, yml), addr
}

// checkTLSOnce checks that enrichd's output holds every event once, each
// from the client subject.
func checkTLSOnce(t *testing.T, what, path string, evs []input, subject string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	seen := map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r struct {
			Message string `json:"message"`
			TLS     struct {
				Client struct {
					Subject string `json:"subject"`
				} `json:"client"`
			} `json:"tls"`
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("%s: %v: %q", what, err, sc.Text())
		}
		m := seqRE.FindStringSubmatch(r.Message)
		if m == nil {
			t.Fatalf("%s: no seq in %q", what, sc.Text())
		}
		seen[m[1]]++
		if r.TLS.Client.Subject != subject {
			t.Fatalf("%s: tls.client.subject %q, want %q: %s", what, r.TLS.Client.Subject, subject, sc.Text())
		}
	}
	bad := 0
	for _, ev := range evs {
		if seen[ev.seq] != 1 {
			if bad++; bad <= 10 {
				t.Errorf("%s: event %s arrived %d times", what, ev.seq, seen[ev.seq])
			}
		}
	}
	if len(seen) != len(evs) {
		t.Errorf("%s: %d distinct events, want %d", what, len(seen), len(evs))
	}
}

// refusedCount reads enrichd's count of TLS input refusals for reason.
func refusedCount(t *testing.T, d *enrichd, reason string) int {
	t.Helper()
	resp, err := http.Get("http://" + d.httpAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	sample := fmt.Sprintf(`enrichd_listener_connections_refused_total{listener="input:tls",reason=%q} `, reason)
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, sample) {
			v, _ := strconv.ParseFloat(l[len(sample):], 64)
			return int(v)
		}
	}
	return 0
}

// waitRefused waits until enrichd counted a refusal for reason.
func waitRefused(t *testing.T, d *enrichd, reason string) {
	t.Helper()
	for end := time.Now().Add(60 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if refusedCount(t, d, reason) > 0 {
			return
		}
	}
	t.Errorf("no connection refused for %s", reason)
}

// TestSyslogNGTLS: syslog-ng forwards events over TLS with its client
// certificate through a syslog() destination (RFC 5425, octet-counted) and
// a network() destination (newline framed), each to its own enrichd that
// requires client certificates: every event arrives once, carrying
// syslog-ng's identity. A destination without a certificate and one with
// a certificate of another CA are refused and counted.
func TestSyslogNGTLS(t *testing.T) {
	program(t, "syslog-ng", "syslog-ng-core")
	const n = 3000
	dir := t.TempDir()
	ca := testpki.NewCA(t, "ca")
	client := ca.Client(t, "syslog-ng")
	stranger := testpki.NewCA(t, "stranger").Client(t, "syslog-ng")
	listen := "127.0.0.1:" + freePort(t)
	conf := "@version: 3.38\n" + syslogngOptions +
		fmt.Sprintf("source s_in { syslog(ip(127.0.0.1) port(%s) transport(tcp) log-iw-size(10000)); };\n", listen[len("127.0.0.1:"):])
	tlsOpts := func(p *testpki.Pair) string {
		if p == nil {
			return fmt.Sprintf("tls(ca-file(%q) peer-verify(required-trusted))", ca.CertFile)
		}
		return fmt.Sprintf("tls(ca-file(%q) cert-file(%q) key-file(%q) peer-verify(required-trusted))", ca.CertFile, p.CertFile, p.KeyFile)
	}
	var ds []*enrichd
	var ports []string
	logPath := "log { source(s_in);"
	for i, dest := range []string{"syslog", "network"} {
		d, addr := tlsEnrichd(t, fmt.Sprintf("enrichd-%s", dest), ca, "syslog-ng")
		port := addr[len("127.0.0.1:"):]
		ds, ports = append(ds, d), append(ports, port)
		conf += fmt.Sprintf("destination d_%d { %s(\"127.0.0.1\" port(%s) transport(\"tls\") %s); };\n", i, dest, port, tlsOpts(client))
		logPath += fmt.Sprintf(" destination(d_%d);", i)
	}
	conf += logPath + " flags(flow-control); };\n"
	// Senders enrichd refuses, on their own log paths (without flow
	// control, so that they hold nothing up).
	for i, p := range []*testpki.Pair{nil, stranger} {
		conf += fmt.Sprintf("destination d_bad%d { syslog(\"127.0.0.1\" port(%s) transport(\"tls\") persist-name(\"bad%d\") %s); };\n", i, ports[0], i, tlsOpts(p))
		conf += fmt.Sprintf("log { source(s_in); destination(d_bad%d); };\n", i)
	}
	ng := startSyslogNG(t, dir, conf, listen)
	evs := genEvents(n, 3, time.Now())
	sendOctetCounted(t, listen, evs)
	waitLines(t, n, 60*time.Second, ds[0].out, ds[1].out)
	waitRefused(t, ds[0], "no_client_cert")
	waitRefused(t, ds[0], "bad_client_cert")
	ng.stop(t)
	for _, d := range ds {
		d.stop(t)
	}
	for i, d := range ds {
		checkTLSOnce(t, []string{"syslog() over TLS", "network() over TLS"}[i], d.out, evs, "CN=syslog-ng,O=lutkit test")
	}
}

// TestRsyslogTLS: rsyslog forwards events with omfwd over TLS (the gtls
// stream driver, mode 1, checking enrichd's certificate name) with its
// client certificate, octet-counted and traditionally framed, each to its
// own enrichd that requires client certificates: every event arrives
// once, carrying rsyslog's identity. An rsyslog whose certificate is not
// in allowed_clients is refused and counted.
func TestRsyslogTLS(t *testing.T) {
	rsyslogd(t)
	const n = 3000
	ca := testpki.NewCA(t, "ca")
	client := ca.Client(t, "rsyslog")
	other := ca.Client(t, "rsyslog-other")
	// rsyslog takes one client certificate for all its actions: the one
	// enrichd does not allow is another rsyslog's.
	badD, badAddr := tlsEnrichd(t, "enrichd-refusing", ca, "someone-else")
	badDir := t.TempDir()
	badListen := "127.0.0.1:" + freePort(t)
	startRsyslog(t, badDir, rsyslogTLSConf(badDir, badListen, ca, other, []string{badAddr}, []string{"octet-counted"}), badListen)
	sendOctetCounted(t, badListen, genEvents(10, 5, time.Now()))
	waitRefused(t, badD, "client_not_allowed")

	dir := t.TempDir()
	framings := []string{"octet-counted", "traditional"}
	var ds []*enrichd
	var addrs []string
	for _, f := range framings {
		d, addr := tlsEnrichd(t, "enrichd-"+f, ca, "rsyslog")
		ds, addrs = append(ds, d), append(addrs, addr)
	}
	listen := "127.0.0.1:" + freePort(t)
	rs := startRsyslog(t, dir, rsyslogTLSConf(dir, listen, ca, client, addrs, framings), listen)
	evs := genEvents(n, 4, time.Now())
	sendOctetCounted(t, listen, evs)
	waitLines(t, n, 60*time.Second, ds[0].out, ds[1].out)
	rs.stop(t)
	for _, d := range ds {
		d.stop(t)
	}
	for i, d := range ds {
		checkTLSOnce(t, "rsyslog omfwd gtls "+framings[i], d.out, evs, "CN=rsyslog,O=lutkit test")
	}
	if refusedCount(t, badD, "client_not_allowed") == 0 {
		t.Error("the refused rsyslog was not counted")
	}
}

// rsyslogTLSConf is an rsyslog that receives on listen (plain TCP) and
// forwards each event over TLS, with client certificate p, to every
// address, in its framing (RFC 5424 format).
func rsyslogTLSConf(dir, listen string, ca *testpki.CA, p *testpki.Pair, addrs, framings []string) string {
	conf := fmt.Sprintf(`global(workDirectory=%q maxMessageSize="64k" parser.permitSlashInProgramname="on"
  DefaultNetstreamDriverCAFile=%q DefaultNetstreamDriverCertFile=%q DefaultNetstreamDriverKeyFile=%q)
module(load="imtcp")
input(type="imtcp" address="127.0.0.1" port=%q ruleset="fwd")
ruleset(name="fwd") {
`, dir, ca.CertFile, p.CertFile, p.KeyFile, listen[len("127.0.0.1:"):])
	for i, a := range addrs {
		conf += fmt.Sprintf(`  action(type="omfwd" target="127.0.0.1" port=%q protocol="tcp" TCP_Framing=%q template="RSYSLOG_SyslogProtocol23Format"
    StreamDriver="gtls" StreamDriverMode="1" StreamDriverAuthMode="x509/name" StreamDriverPermittedPeers="localhost"
    action.resumeRetryCount="-1" action.resumeInterval="1")
`, a[len("127.0.0.1:"):], framings[i])
	}
	return conf + "}\n"
}

// TestTLSRotationSyslogNG replaces enrichd's certificate files and sends
// it SIGHUP while syslog-ng streams to it over TLS: openssl s_client,
// connecting after the replacement, is served the new certificate;
// syslog-ng's connection, open across it, goes on; every event arrives
// once.
func TestTLSRotationSyslogNG(t *testing.T) {
	program(t, "syslog-ng", "syslog-ng-core")
	ossl := program(t, "openssl", "openssl")
	const n = 2000
	ca := testpki.NewCA(t, "ca")
	first, second := ca.Server(t, "first"), ca.Server(t, "second")
	client := ca.Client(t, "syslog-ng")
	tdir := t.TempDir()
	certFile, keyFile := filepath.Join(tdir, "server.pem"), filepath.Join(tdir, "server-key.pem")
	install := func(p *testpki.Pair) {
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
	addr := "127.0.0.1:" + freePort(t)
	d := startEnrichdConfig(t, "enrichd", fmt.Sprintf(`inputs:
  - name: tls
    type: tcp
    listen: %q
    tls: {cert_file: %q, key_file: %q, client_ca_file: %q}
pipeline: {tls_client: true}
`, addr, certFile, keyFile, ca.CertFile))
	served := func() string {
		out, _ := exec.Command(ossl, "s_client", "-connect", addr, "-CAfile", ca.CertFile, "-cert", client.CertFile,
			"-key", client.KeyFile, "-verify_return_error").CombinedOutput()
		m := regexp.MustCompile(`subject=.*CN ?= ?(\w+)`).FindSubmatch(out)
		if m == nil {
			t.Fatalf("openssl s_client: no subject in\n%s", out)
		}
		return string(m[1])
	}
	if cn := served(); cn != "first" {
		t.Fatalf("served %q", cn)
	}
	dir := t.TempDir()
	listen := "127.0.0.1:" + freePort(t)
	conf := "@version: 3.38\n" + syslogngOptions +
		fmt.Sprintf("source s_in { syslog(ip(127.0.0.1) port(%s) transport(tcp) log-iw-size(10000)); };\n", listen[len("127.0.0.1:"):]) +
		fmt.Sprintf("destination d_tls { syslog(\"127.0.0.1\" port(%s) transport(\"tls\") tls(ca-file(%q) cert-file(%q) key-file(%q) peer-verify(required-trusted))); };\n",
			addr[len("127.0.0.1:"):], ca.CertFile, client.CertFile, client.KeyFile) +
		"log { source(s_in); destination(d_tls); flags(flow-control); };\n"
	ng := startSyslogNG(t, dir, conf, listen)
	evs := genEvents(2*n, 6, time.Now())
	sendOctetCounted(t, listen, evs[:n])
	waitLines(t, n, 60*time.Second, d.out)
	accepted := func() int {
		resp, err := http.Get("http://" + d.httpAddr + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		m := regexp.MustCompile(`(?m)^enrichd_listener_connections_total\{listener="input:tls",tls="true"\} (\d+)`).FindSubmatch(b)
		if m == nil {
			t.Fatalf("no listener_connections_total in\n%s", b)
		}
		v, _ := strconv.Atoi(string(m[1]))
		return v
	}
	before := accepted()

	install(second)
	if err := d.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	var cn string
	probes := 0
	for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		probes++
		if cn = served(); cn == "second" {
			break
		}
	}
	if cn != "second" {
		t.Fatalf("served %q after the replacement and SIGHUP", cn)
	}
	sendOctetCounted(t, listen, evs[n:])
	waitLines(t, 2*n, 60*time.Second, d.out)
	// syslog-ng kept its connection: the only new ones are openssl's.
	if after := accepted(); after != before+probes {
		t.Errorf("%d connections after the rotation, want %d (openssl's %d)", after-before, probes, probes)
	}
	ng.stop(t)
	d.stop(t)
	checkTLSOnce(t, "syslog-ng over TLS across a rotation", d.out, evs, "CN=syslog-ng,O=lutkit test")
}
