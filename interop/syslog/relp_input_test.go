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
	"sync"
	"testing"
	"time"

	"github.com/lutkit/lutkit/internal/testfiles"
	"github.com/lutkit/lutkit/internal/testpki"
)

// relpInSeqRE finds an event's number in an output line.
var relpInSeqRE = regexp.MustCompile(`seq=(\d+) `)

// relpReceiver is the TCP peer of enrichd's tcp output: it counts the
// whole lines it reads by their seq, across connections (a line cut short
// by a connection that breaks is not counted).
type relpReceiver struct {
	ln    net.Listener
	mu    sync.Mutex
	seen  map[int]int
	conns [][]int // the seqs of each connection, in the order read
	stray int     // lines without a seq
	// need, when set, is in every line; lacking counts those without.
	need    []byte
	lacking int
}

func newRELPReceiver(t *testing.T, need string) *relpReceiver {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &relpReceiver{ln: ln, seen: map[int]int{}}
	if need != "" {
		r.need = []byte(need)
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			r.mu.Lock()
			i := len(r.conns)
			r.conns = append(r.conns, nil)
			r.mu.Unlock()
			go func() {
				defer c.Close()
				br := bufio.NewReaderSize(c, 64<<10)
				for {
					l, err := br.ReadSlice('\n')
					if err != nil {
						return
					}
					m := relpInSeqRE.FindSubmatch(l)
					r.mu.Lock()
					if r.need != nil && !bytes.Contains(l, r.need) {
						r.lacking++
					}
					if m == nil {
						r.stray++
					} else {
						seq, _ := strconv.Atoi(string(m[1]))
						r.seen[seq]++
						r.conns[i] = append(r.conns[i], seq)
					}
					r.mu.Unlock()
				}
			}()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return r
}

func (r *relpReceiver) addr() string { return r.ln.Addr().String() }

func (r *relpReceiver) counts() (distinct, dups int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, n := range r.seen {
		distinct++
		dups += n - 1
	}
	return distinct, dups
}

// missing returns the first seqs below n not received.
func (r *relpReceiver) missing(n int) []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []int
	for i := range n {
		if r.seen[i] == 0 && len(out) < 10 {
			out = append(out, i)
		}
	}
	return out
}

// waitReceived waits until the receiver holds n distinct events, or
// nothing new arrived for stall.
func (r *relpReceiver) waitReceived(n int, stall time.Duration) int {
	last, since := -1, time.Now()
	for {
		d, _ := r.counts()
		if d >= n {
			return d
		}
		if d != last {
			last, since = d, time.Now()
		} else if time.Since(since) > stall {
			return d
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// relpEvents returns n numbered RFC 5424 events, seq=0 to n-1.
func relpEvents(n int) []input {
	evs := make([]input, n)
	for i := range evs {
		evs[i] = input{seq: strconv.Itoa(i), wire: fmt.Appendf(nil, "<13>1 2026-12-03T08:00:00.000000Z host-%d app %d - - seq=%d pad=abcdefghijklmnopqrstuvwxyz0123456789", i%7, i%1000, i)}
	}
	return evs
}

// rsyslogRELP checks that rsyslog and its RELP modules (rsyslog-relp:
// omrelp.so, imrelp.so) are there, before anything starts.
func rsyslogRELP(t testing.TB) {
	t.Helper()
	_, mods := rsyslogd(t)
	for _, m := range []string{"omrelp.so", "imrelp.so"} {
		if _, err := os.Stat(filepath.Join(mods, m)); err != nil {
			testfiles.Missing(t, filepath.Join(mods, m)+" (Debian package rsyslog-relp, unpacked by .ci/rsyslog.sh)")
		}
	}
}

// rsyslogRELPConf is an rsyslog that receives on listen (plain TCP) and
// forwards every event with omrelp to addr, with a window of relpWindow
// (extra: more of the action's parameters, TLS among them), retrying for
// ever, once a second.
func rsyslogRELPConf(dir, listen, addr, extra string) string {
	return fmt.Sprintf(`global(workDirectory=%q maxMessageSize="64k")
module(load="imtcp")
module(load="omrelp")
main_queue(queue.size="200000")
input(type="imtcp" address="127.0.0.1" port=%q ruleset="fwd")
ruleset(name="fwd") {
  action(type="omrelp" target="127.0.0.1" port=%q windowSize="%d" %s
    action.resumeRetryCount="-1" action.resumeInterval="1")
}
`, dir, listen[len("127.0.0.1:"):], addr[len("127.0.0.1:"):], relpWindow, extra)
}

// metric reads one sample of enrichd's /metrics (0 when absent).
func (d *enrichd) metric(t testing.TB, sample string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + d.httpAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, sample+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatal(err)
			}
			return f
		}
	}
	return 0
}

// startRELPEnrichd starts the built enrichd with the configuration yml
// as it is (its own outputs: no --out) and its HTTP listener, and waits
// until /readyz answers 200.
func startRELPEnrichd(t testing.TB, name, yml string) *enrichd {
	t.Helper()
	conf := filepath.Join(t.TempDir(), "enrichd.yaml")
	if err := os.WriteFile(conf, []byte(yml), 0o644); err != nil {
		t.Fatal(err)
	}
	httpAddr := "127.0.0.1:" + freePort(t)
	p := start(t, name, []string{enrichdBin, "--config", conf, "--http", httpAddr}, nil)
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if p.exited() {
			t.Fatalf("%s exited before it was ready: %v\n%s", name, p.err, p.output())
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not ready after 60 s\n%s", name, p.output())
		}
		if r, err := http.Get("http://" + httpAddr + "/readyz"); err == nil {
			r.Body.Close()
			if r.StatusCode == http.StatusOK {
				return &enrichd{p, "", httpAddr}
			}
		}
	}
}

// kill9 kills the process with SIGKILL and waits for it.
func (p *proc) kill9(t testing.TB) {
	t.Helper()
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-p.done
}

// relpWindow is omrelp's window (windowSize) in the tests: the commands a
// session sends before it waits for their answers, which it sends again
// on its next session when the one they were sent on broke. It is larger
// than librelp's default, 128: omrelp corks its socket (TCP_CORK) for
// each batch of rsyslog's queue, and a batch larger than the window waits
// for answers to frames the kernel holds back, 200 ms each time (700
// events/s in this test with the default).
const relpWindow = 1024

// TestRsyslogRELPKill9: rsyslog's omrelp forwards 50,000 numbered events
// to enrichd's relp input, whose tcp output writes them to a receiver
// that counts each seq. enrichd, as a process, is killed with SIGKILL in
// the middle of the stream and started again on the same port: the
// receiver holds every event (0 lost). With the persistent queue (sync:
// 1000) the events are acknowledged once fsynced into it, and the
// restarted enrichd replays it; without it, once the output has written
// them. The duplicates are counted: the unanswered window omrelp sends
// again (at most its window, 1024 here, per session broken), and with the queue what it
// replays of the delivered (see TestQueueKill9DuringReplay).
func TestRsyslogRELPKill9(t *testing.T) {
	rsyslogRELP(t)
	for _, mode := range []struct{ name, queue string }{
		{"queue", "queue: {type: disk, path: %q, max_bytes: 1GiB, sync: 1000}\n"},
		{"no queue", ""},
	} {
		t.Run(mode.name, func(t *testing.T) {
			const n = 50_000
			dir := t.TempDir()
			rcv := newRELPReceiver(t, "")
			relpAddr := "127.0.0.1:" + freePort(t)
			yml := fmt.Sprintf(`inputs:
  - {name: relp, type: relp, listen: %q}
outputs:
  - {name: peer, type: tcp, address: %q}
shutdown_timeout: 5s
`, relpAddr, rcv.addr())
			if mode.queue != "" {
				yml += fmt.Sprintf(mode.queue, filepath.Join(dir, "queue"))
			}
			d := startRELPEnrichd(t, "enrichd-1", yml)
			listen := "127.0.0.1:" + freePort(t)
			rs := startRsyslog(t, dir, rsyslogRELPConf(dir, listen, relpAddr, ""), listen)
			began := time.Now()
			sendOctetCounted(t, listen, relpEvents(n))

			for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(5 * time.Millisecond) {
				if got, _ := rcv.counts(); got >= n/3 {
					break
				}
				if time.Now().After(deadline) {
					got, _ := rcv.counts()
					t.Fatalf("%d of %d events received in 2 minutes\n%s", got, n, rs.output())
				}
			}
			d.kill9(t)
			killed := time.Now()
			time.Sleep(200 * time.Millisecond) // what was in flight on the connection is read
			atKill, _ := rcv.counts()
			rcv.mu.Lock()
			firstConns := len(rcv.conns)
			rcv.mu.Unlock()
			if atKill >= n {
				t.Fatalf("every event (%d) was received before the kill", atKill)
			}
			d = startRELPEnrichd(t, "enrichd-2", yml)
			got := rcv.waitReceived(n, 60*time.Second)
			if got < n {
				t.Fatalf("%d of %d events received; missing %v\nrsyslog:\n%s", got, n, rcv.missing(n), rs.output())
			}
			// Every event the second enrichd took is answered, every one
			// it holds (its queue's included) is out, and the receiver
			// has read them.
			var taken, answered, out, read float64
			settled := 0 // polls in a row that found it so, 100 ms apart
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
				taken = d.metric(t, `enrichd_events_in_total{input="relp",type="relp"}`)
				answered = d.metric(t, `enrichd_relp_input_acked_total{input="relp"}`)
				out = d.metric(t, "enrichd_events_out_total")
				read = taken
				if mode.queue != "" {
					read = d.metric(t, `enrichd_disk_queue_events_total{stage="read"}`)
				}
				rcv.mu.Lock()
				lines := 0
				for _, c := range rcv.conns[firstConns:] {
					lines += len(c)
				}
				rcv.mu.Unlock()
				if answered == taken && out == read && float64(lines) == out {
					if settled++; settled == 3 {
						break
					}
					continue
				}
				settled = 0
				if time.Now().After(deadline) {
					t.Fatalf("the second enrichd took %.0f events, answered %.0f, read %.0f from its queue, wrote %.0f; the receiver got %d",
						taken, answered, read, out, lines)
				}
			}
			replayed := int(read - taken)
			rs.stop(t)
			d.stop(t)

			// The second enrichd writes what its queue replays first,
			// then what it took over RELP: the lines of the connections
			// made after the kill, in order.
			rcv.mu.Lock()
			defer rcv.mu.Unlock()
			stored := map[int]bool{} // what the first enrichd held: delivered, or in its queue
			for _, c := range rcv.conns[:firstConns] {
				for _, seq := range c {
					stored[seq] = true
				}
			}
			var after []int
			for _, c := range rcv.conns[firstConns:] {
				after = append(after, c...)
			}
			if replayed > len(after) {
				t.Fatalf("the queue replayed %d events, the receiver got %d after the kill", replayed, len(after))
			}
			for _, seq := range after[:replayed] {
				stored[seq] = true
			}
			resent := 0 // taken again over RELP: omrelp's window
			for _, seq := range after[replayed:] {
				if stored[seq] {
					resent++
				}
			}
			distinct, dups := 0, 0
			for _, c := range rcv.seen {
				distinct++
				dups += c - 1
			}
			t.Logf("%s: %d events, %d received at the kill (%s after the start), all %d %s after it; %d duplicates: %d replayed by the queue of what was delivered, %d sent again by omrelp",
				mode.name, n, atKill, killed.Sub(began).Round(time.Millisecond), distinct, time.Since(killed).Round(time.Millisecond), dups, dups-resent, resent)
			if rcv.stray != 0 {
				t.Errorf("%d lines without a seq", rcv.stray)
			}
			if resent > relpWindow {
				t.Errorf("omrelp sent %d events again, more than its window (%d) for the one session broken", resent, relpWindow)
			}
			if mode.queue == "" && dups != resent {
				t.Errorf("%d duplicates without the queue, %d of them sent again", dups, resent)
			}

		})
	}
}

// TestRsyslogRELPTLS: rsyslog's omrelp forwards over TLS (tls="on", its
// client certificate, checking enrichd's certificate by name in one
// rsyslog, tls.authMode="name", and by its CA in another, "certvalid") to a relp
// input that requires client certificates of its CA and allows the
// sender's name: every event arrives once, carrying the sender's
// identity, and each is acknowledged. An omrelp whose certificate is of
// another CA is refused (counted by reason, and logged): none of its
// events arrives.
func TestRsyslogRELPTLS(t *testing.T) {
	rsyslogRELP(t)
	const n = 5000
	ca := testpki.NewCA(t, "ca")
	srv := ca.Server(t, "enrichd")
	client := ca.Client(t, "rsyslog")
	stranger := testpki.NewCA(t, "stranger").Client(t, "rsyslog")
	rcv := newRELPReceiver(t, `"subject":"CN=rsyslog,O=lutkit test"`)
	relpAddr := "127.0.0.1:" + freePort(t)
	d := startRELPEnrichd(t, "enrichd", fmt.Sprintf(`inputs:
  - name: relp
    type: relp
    listen: %q
    tls: {cert_file: %q, key_file: %q, client_ca_file: %q, allowed_clients: [rsyslog]}
outputs:
  - {name: peer, type: tcp, address: %q}
pipeline: {tls_client: true}
`, relpAddr, srv.CertFile, srv.KeyFile, ca.CertFile, rcv.addr()))
	tlsConf := func(p *testpki.Pair, authMode string) string {
		conf := fmt.Sprintf(`tls="on" tls.caCert=%q tls.myCert=%q tls.myPrivKey=%q tls.authMode=%q`, ca.CertFile, p.CertFile, p.KeyFile, authMode)
		if authMode == "name" {
			conf += ` tls.permittedPeer=["localhost"]`
		}
		return conf
	}

	// The stranger first: its events are numbered from n on.
	badDir := t.TempDir()
	badListen := "127.0.0.1:" + freePort(t)
	bad := startRsyslog(t, badDir, rsyslogRELPConf(badDir, badListen, relpAddr, tlsConf(stranger, "name")), badListen)
	strangers := relpEvents(n + 10)[n:]
	sendOctetCounted(t, badListen, strangers)
	// librelp's TLS (GnuTLS) does not send a certificate that the CAs
	// enrichd names in its request did not sign: no_client_cert; one
	// sent anyway would be bad_client_cert.
	refused := func() float64 {
		return d.metric(t, `enrichd_listener_connections_refused_total{listener="input:relp",reason="no_client_cert"}`) +
			d.metric(t, `enrichd_listener_connections_refused_total{listener="input:relp",reason="bad_client_cert"}`)
	}
	for deadline := time.Now().Add(60 * time.Second); refused() == 0; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the stranger's connection was not refused\nenrichd:\n%s\nrsyslog:\n%s", d.output(), bad.output())
		}
	}

	// Two senders, checking enrichd's certificate by name and by its
	// CA alone: each sends half of the events.
	var senders []*proc
	for i, mode := range []string{"name", "certvalid"} {
		dir := t.TempDir()
		listen := "127.0.0.1:" + freePort(t)
		senders = append(senders, startRsyslog(t, dir, rsyslogRELPConf(dir, listen, relpAddr, tlsConf(client, mode)), listen))
		sendOctetCounted(t, listen, relpEvents(n)[i*n/2:(i+1)*n/2])
	}
	got := rcv.waitReceived(n, 60*time.Second)
	acked := d.metric(t, `enrichd_relp_input_acked_total{input="relp"}`)
	for deadline := time.Now().Add(10 * time.Second); acked < n && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		acked = d.metric(t, `enrichd_relp_input_acked_total{input="relp"}`)
	}
	time.Sleep(500 * time.Millisecond) // a stranger's event, were one let in, would arrive
	for _, rs := range senders {
		rs.stop(t)
	}
	bad.stop(t)
	d.stop(t)

	if got < n {
		t.Fatalf("%d of %d events received; missing %v", got, n, rcv.missing(n))
	}
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	for seq, c := range rcv.seen {
		switch {
		case seq >= n:
			t.Errorf("event %d of the refused sender arrived", seq)
		case c != 1:
			t.Errorf("event %d arrived %d times", seq, c)
		}
	}
	if rcv.lacking != 0 || rcv.stray != 0 {
		t.Errorf("%d lines without the sender's subject, %d without a seq", rcv.lacking, rcv.stray)
	}
	if acked != n {
		t.Errorf("%.0f events acknowledged, want %d", acked, n)
	}
	if !regexp.MustCompile(`"msg":"connection refused","input":"relp","listener":"relp","reason":"(no|bad)_client_cert"`).MatchString(d.output()) {
		t.Errorf("the refusal is not logged:\n%s", d.output())
	}
}
