package syslog

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lutkit/lutkit/internal/testpki"
)

// The relp output of enrichd sending to rsyslog's imrelp (librelp).

// relpReceiverConf is an rsyslog that receives RELP on port (input
// settings extra, for TLS) and writes each message as it arrived
// (%rawmsg%: enrichd's JSON line) to out. The ruleset's queue is Direct,
// so that imrelp acknowledges a message only once omfile has written it:
// an acknowledged message then survives rsyslogd's kill -9.
func relpReceiverConf(dir, port, out, extra string) string {
	return fmt.Sprintf(`global(workDirectory=%q maxMessageSize="64k")
module(load="imrelp")
template(name="raw" type="string" string="%%rawmsg%%\n")
input(type="imrelp" address="127.0.0.1" port=%q ruleset="relp"%s)
ruleset(name="relp" queue.type="Direct") {
  action(type="omfile" file=%q template="raw")
}
`, dir, port, extra, out)
}

// metricValue reads one sample of enrichd's /metrics (0 when absent).
func metricValue(t testing.TB, d *enrichd, sample string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + d.httpAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, sample+" ") {
			v, _ := strconv.ParseFloat(strings.TrimSpace(l[len(sample):]), 64)
			return v
		}
	}
	return 0
}

// relpSeqRE finds an event's number in the line rsyslog wrote.
var relpSeqRE = regexp.MustCompile(`seq=(\d+)`)

// relpCounts reads rsyslog's file: how many times each event number
// arrived, and the lines.
func relpCounts(t testing.TB, path string) (map[int]int, int) {
	t.Helper()
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return map[int]int{}, 0
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	seen := map[int]int{}
	lines := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		lines++
		m := relpSeqRE.FindSubmatch(sc.Bytes())
		if m == nil {
			t.Fatalf("%s:%d: no seq in %q", path, lines, sc.Text())
		}
		n, _ := strconv.Atoi(string(m[1]))
		seen[n]++
	}
	return seen, lines
}

// sendNumbered sends events seq=0 .. seq=n-1 of the application app to
// addr, newline framed, in the background; the channel gets the error or
// nil once all are sent.
func sendNumbered(addr, app string, n int) <-chan error { return sendRange(addr, app, 0, n) }

// sendRange is sendNumbered of the events seq=from .. seq=to-1, on a
// connection of their own.
func sendRange(addr, app string, from, to int) <-chan error {
	done := make(chan error, 1)
	go func() {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			done <- err
			return
		}
		defer c.Close()
		w := bufio.NewWriterSize(c, 64<<10)
		for i := from; i < to; i++ {
			fmt.Fprintf(w, "<14>1 2026-12-03T08:00:00.000Z web-1 %s - - - seq=%06d user=alice action=login bytes=%d\n", app, i, i*7)
		}
		done <- w.Flush()
	}()
	return done
}

// waitDistinct waits until rsyslog's file holds every one of n events,
// or nothing new arrives for stall.
func waitDistinct(t testing.TB, path string, n int, stall time.Duration) {
	t.Helper()
	last, since := -1, time.Now()
	for {
		lines := countLines(path)
		if lines >= n {
			if seen, _ := relpCounts(t, path); len(seen) >= n {
				return
			}
		}
		if lines != last {
			last, since = lines, time.Now()
		} else if time.Since(since) > stall {
			t.Logf("rsyslog's file: %d lines, no progress for %s", lines, stall)
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// killProc kills a program with SIGKILL and waits for its end.
func killProc(t testing.TB, p *proc) {
	t.Helper()
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-p.done
}

// TestRELPOutputReceiverKilled: 100,000 numbered events arrive over TCP
// into enrichd, whose relp output sends them to rsyslog's imrelp writing
// them to a file. The receiver is killed (kill -9) twice while the
// stream goes on, and started again on the same port. Every event must be
// in rsyslog's file; the duplicates are counted, at most the window per
// break and at most what enrichd counts as sent again; each kill is one
// session break counted; enrichd's events_out is every event, once. The events come in three parts, the
// next sent once the receiver is killed, so that the output has events
// to send on the session each kill breaks, however fast it delivered the
// part before.
func TestRELPOutputReceiverKilled(t *testing.T) {
	rsyslogd(t)
	const n, window = 100_000, 128
	dir := t.TempDir()
	port := freePort(t)
	out := filepath.Join(dir, "relp.out")
	conf := relpReceiverConf(dir, port, out, "")
	rs := startRsyslog(t, dir, conf, "127.0.0.1:"+port)

	in := "127.0.0.1:" + freePort(t)
	d := startRELPEnrichd(t, "enrichd-relp", fmt.Sprintf(`inputs:
  - {name: tcp, type: tcp, listen: %q}
outputs:
  - {name: relp, type: relp, address: "127.0.0.1:%s", window: %d, timeout: 10s}
`, in, port, window))
	sent := sendRange(in, "relptest", 0, n/3)

	kills := 0
	for i, at := range []int{n / 4, n / 2} {
		for countLines(out) < at {
			if rs.exited() {
				t.Fatalf("rsyslogd exited: %v\n%s", rs.err, rs.output())
			}
			time.Sleep(20 * time.Millisecond)
		}
		killProc(t, rs)
		kills++
		t.Logf("rsyslogd killed with %d lines written", countLines(out))
		if err := <-sent; err != nil {
			t.Fatal(err)
		}
		sent = sendRange(in, "relptest", (i+1)*n/3, (i+2)*n/3)
		time.Sleep(500 * time.Millisecond)
		rs = startRsyslog(t, dir, conf, "127.0.0.1:"+port)
	}
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	waitDistinct(t, out, n, 60*time.Second)
	waitEventsOut(t, d, n)
	eventsOut := metricValue(t, d, "enrichd_events_out_total")
	delivered := metricValue(t, d, `enrichd_output_events_total{output="relp",type="relp"}`)
	breaks := metricValue(t, d, `enrichd_output_relp_session_breaks_total{output="relp"}`)
	resent := metricValue(t, d, `enrichd_output_relp_events_resent_total{output="relp"}`)
	sessions := metricValue(t, d, `enrichd_output_relp_sessions_total{output="relp"}`)
	d.stop(t)
	rs.stop(t)

	seen, lines := relpCounts(t, out)
	lost := 0
	for i := range n {
		if seen[i] == 0 {
			if lost++; lost <= 10 {
				t.Errorf("event seq=%06d lost", i)
			}
		}
	}
	dups := lines - len(seen)
	t.Logf("%d events, %d lines in rsyslog's file: %d lost, %d duplicates; %d sessions, %d breaks, %d resent; events_out %v",
		n, lines, lost, dups, int(sessions), int(breaks), int(resent), eventsOut)
	if lost > 0 || len(seen) != n {
		t.Errorf("%d of %d events lost (%d distinct)", lost, n, len(seen))
	}
	if breaks != float64(kills) || sessions != float64(kills+1) {
		t.Errorf("%d kills but %v session breaks and %v sessions, want one break each and one session more", kills, breaks, sessions)
	}
	if dups > window*int(breaks) {
		t.Errorf("%d duplicates, more than the window (%d) times the %v breaks", dups, window, breaks)
	}
	if float64(dups) > resent {
		t.Errorf("%d duplicates, more than the %v events counted as sent again", dups, resent)
	}
	if eventsOut != n || delivered != n {
		t.Errorf("events_out %v, relp output delivered %v: want %d, what rsyslog's file holds without its %d duplicates", eventsOut, delivered, n, dups)
	}
}

// relpTLSSender starts an enrichd with a tcp input and a relp output over
// TLS to port, trusting ca, with the client certificate client; tlsExtra
// adds keys to the output's tls block. It returns it and its input's
// address.
func relpTLSSender(t *testing.T, name, port string, ca *testpki.CA, client *testpki.Pair, tlsExtra string) (*enrichd, string) {
	t.Helper()
	in := "127.0.0.1:" + freePort(t)
	return startRELPEnrichd(t, name, fmt.Sprintf(`inputs:
  - {name: tcp, type: tcp, listen: %q}
outputs:
  - name: relp
    type: relp
    address: "127.0.0.1:%s"
    timeout: 10s
    tls: {ca_file: %q, cert_file: %q, key_file: %q%s}
`, in, port, ca.CertFile, client.CertFile, client.KeyFile, tlsExtra)), in
}

// waitConnectErrors waits until the relp output of d counted n errors
// of reason connect, and returns the count.
func waitConnectErrors(t *testing.T, d *enrichd, n float64) float64 {
	t.Helper()
	const sample = `enrichd_output_errors_total{output="relp",reason="connect",type="relp"}`
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if metricValue(t, d, sample) >= n {
			break
		}
	}
	return metricValue(t, d, sample)
}

// TestRELPOutputTLS: enrichd's relp output with a client certificate
// sends over TLS to imrelp, which requires a client certificate of its
// CA (tls.authMode="certvalid"): every event arrives once. An output with
// a certificate of another CA is refused by imrelp: rsyslog writes none
// of its events, and enrichd counts none delivered while it retries. An
// output whose server_name rsyslog's certificate does not carry refuses
// the server.
func TestRELPOutputTLS(t *testing.T) {
	rsyslogd(t)
	const n = 5000
	ca := testpki.NewCA(t, "ca")
	srv := ca.Server(t, "rsyslog")
	dir := t.TempDir()
	port := freePort(t)
	out := filepath.Join(dir, "relp.out")
	extra := fmt.Sprintf(` tls="on" tls.authMode="certvalid" tls.caCert=%q tls.myCert=%q tls.myPrivKey=%q`, ca.CertFile, srv.CertFile, srv.KeyFile)
	rs := startRsyslog(t, dir, relpReceiverConf(dir, port, out, extra), "127.0.0.1:"+port)

	sender := func(name string, client *testpki.Pair, tlsExtra string) (*enrichd, string) {
		return relpTLSSender(t, name, port, ca, client, tlsExtra)
	}
	// The stranger first: nothing of it may reach the file.
	stranger, strangerIn := sender("enrichd-stranger", testpki.NewCA(t, "stranger").Client(t, "enrichd"), "")
	if err := <-sendNumbered(strangerIn, "stranger", 100); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if metricValue(t, stranger, `enrichd_output_errors_total{output="relp",reason="connect",type="relp"}`) >= 2 {
			break
		}
	}
	strangerErrs := metricValue(t, stranger, `enrichd_output_errors_total{output="relp",reason="connect",type="relp"}`)
	strangerOut := metricValue(t, stranger, "enrichd_events_out_total")
	strangerSessions := metricValue(t, stranger, `enrichd_output_relp_sessions_total{output="relp"}`)
	t.Logf("the stranger: %v connect errors, %v sessions, events_out %v", strangerErrs, strangerSessions, strangerOut)

	// A server_name rsyslog's certificate does not carry: the output
	// refuses the server.
	misnamed, misnamedIn := sender("enrichd-misnamed", ca.Client(t, "enrichd"), ", server_name: other.example")
	if err := <-sendNumbered(misnamedIn, "misnamed", 100); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if metricValue(t, misnamed, `enrichd_output_errors_total{output="relp",reason="connect",type="relp"}`) >= 1 {
			break
		}
	}
	if !strings.Contains(misnamed.output(), "not other.example") || metricValue(t, misnamed, "enrichd_events_out_total") != 0 {
		t.Errorf("an output whose server_name the server's certificate does not carry: events_out %v, log:\n%s",
			metricValue(t, misnamed, "enrichd_events_out_total"), misnamed.output())
	}
	killProc(t, misnamed.proc)

	good, goodIn := sender("enrichd-tls", ca.Client(t, "enrichd"), "")
	if err := <-sendNumbered(goodIn, "relptest", n); err != nil {
		t.Fatal(err)
	}
	waitDistinct(t, out, n, 30*time.Second)
	waitEventsOut(t, good, n)
	goodOut := metricValue(t, good, "enrichd_events_out_total")
	good.stop(t)
	if s := metricValue(t, stranger, "enrichd_events_out_total"); s != 0 {
		t.Errorf("the stranger's output counted %v events delivered", s)
	}
	rs.stop(t)

	seen, lines := relpCounts(t, out)
	if len(seen) != n || lines != n {
		t.Errorf("rsyslog's file: %d lines, %d distinct events; want %d once each", lines, len(seen), n)
	}
	if goodOut != n {
		t.Errorf("events_out %v, want %d", goodOut, n)
	}
	if !strings.Contains(stranger.output(), "closed the connection before it answered open") {
		t.Errorf("the stranger's log does not say imrelp refused the session at open")
	}
	if strangerErrs < 2 || strangerOut != 0 || strangerSessions != 0 {
		t.Errorf("the stranger: %v connect errors (want its retries, 2 or more), %v sessions, events_out %v (want 0)",
			strangerErrs, strangerSessions, strangerOut)
	}
	if b, _ := os.ReadFile(out); bytes.Contains(b, []byte(`"stranger"`)) || bytes.Contains(b, []byte(`"misnamed"`)) {
		t.Errorf("an event of the stranger or of the misnamed reached rsyslog")
	}
	// The stranger still retries: its events are undelivered, not lost
	// (on SIGTERM it would give up only after shutdown_timeout).
	killProc(t, stranger.proc)
}

// TestRELPOutputTLSName: imrelp with tls.authMode="name" takes the
// client certificate whose name is a permitted peer, and refuses one of
// the same CA with another name: every event of the first arrives once,
// none of the second, which enrichd counts as errors, never delivered.
func TestRELPOutputTLSName(t *testing.T) {
	rsyslogd(t)
	const n = 2000
	ca := testpki.NewCA(t, "ca")
	srv := ca.Server(t, "rsyslog")
	dir := t.TempDir()
	port := freePort(t)
	out := filepath.Join(dir, "relp.out")
	extra := fmt.Sprintf(` tls="on" tls.authMode="name" tls.permittedPeer=["enrichd"] tls.caCert=%q tls.myCert=%q tls.myPrivKey=%q`,
		ca.CertFile, srv.CertFile, srv.KeyFile)
	rs := startRsyslog(t, dir, relpReceiverConf(dir, port, out, extra), "127.0.0.1:"+port)

	intruder, intruderIn := relpTLSSender(t, "enrichd-intruder", port, ca, ca.Client(t, "intruder"), "")
	if err := <-sendNumbered(intruderIn, "intruder", 100); err != nil {
		t.Fatal(err)
	}
	intruderErrs := waitConnectErrors(t, intruder, 2)
	good, goodIn := relpTLSSender(t, "enrichd-named", port, ca, ca.Client(t, "enrichd"), "")
	if err := <-sendNumbered(goodIn, "named", n); err != nil {
		t.Fatal(err)
	}
	waitDistinct(t, out, n, 30*time.Second)
	waitEventsOut(t, good, n)
	goodOut := metricValue(t, good, "enrichd_events_out_total")
	intruderOut := metricValue(t, intruder, "enrichd_events_out_total")
	good.stop(t)
	killProc(t, intruder.proc)
	rs.stop(t)
	// librelp's words (and spelling) for a peer not permitted.
	if !strings.Contains(rs.output(), "no permited name found', peer is 'DNSname: intruder") {
		t.Errorf("rsyslogd did not log refusing the intruder's name")
	}

	seen, lines := relpCounts(t, out)
	b, _ := os.ReadFile(out)
	if len(seen) != n || lines != n || bytes.Count(b, []byte(`"named"`)) != n {
		t.Errorf("rsyslog's file: %d lines, %d distinct events; want the %d of the permitted peer once each", lines, len(seen), n)
	}
	if bytes.Contains(b, []byte(`"intruder"`)) {
		t.Errorf("an event of the certificate not permitted reached rsyslog")
	}
	if goodOut != n || intruderOut != 0 || intruderErrs < 2 {
		t.Errorf("events_out %v (want %d); the one not permitted: events_out %v (want 0), %v connect errors (want 2 or more)",
			goodOut, n, intruderOut, intruderErrs)
	}
}

// waitEventsOut waits up to 30 s until d counts n events out (its
// outputs delivered them); the test then compares the count with what
// the receiver holds.
func waitEventsOut(t testing.TB, d *enrichd, n int) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if metricValue(t, d, "enrichd_events_out_total") >= float64(n) {
			return
		}
	}
}
