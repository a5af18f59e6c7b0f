package main

import (
	"bufio"
	"fmt"
	"net"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lutkit/lutkit/internal/seqtally"
)

// seqReceiver is a TCP peer that counts the whole lines it reads by
// their seq, across connections.
type seqReceiver struct {
	t    *testing.T
	ln   net.Listener
	seen seqtally.Tally
	wg   sync.WaitGroup
	// slowEvery, when above 0, makes the receiver sleep a millisecond
	// after each slowEvery lines of a connection: a slow peer.
	slowEvery int
}

var seqRE = regexp.MustCompile(`seq=(\d+) `)

// newSlowSeqReceiver is a seqReceiver that sleeps a millisecond after
// every slowEvery lines (0: never).
func newSlowSeqReceiver(t *testing.T, addr string, slowEvery int) *seqReceiver {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	r := &seqReceiver{t: t, ln: ln, slowEvery: slowEvery}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			r.wg.Add(1)
			go func() {
				defer r.wg.Done()
				defer c.Close()
				br := bufio.NewReaderSize(c, 64<<10)
				for lines := 1; ; lines++ {
					if r.slowEvery > 0 && lines%r.slowEvery == 0 {
						time.Sleep(time.Millisecond)
					}
					l, err := br.ReadSlice('\n')
					if err != nil {
						return
					}
					m := seqRE.FindSubmatch(l)
					if m == nil {
						t.Errorf("a line without seq: %.200q", l)
						continue
					}
					seq, _ := strconv.Atoi(string(m[1]))
					r.seen.Add(seq)
				}
			}()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return r
}

// readToEnd closes the listener and waits until the reader of every
// connection has reached its end, which the sender's close marks; a
// connection still open a minute later fails the test.
func (r *seqReceiver) readToEnd(t *testing.T) {
	t.Helper()
	r.ln.Close()
	done := make(chan struct{})
	go func() { r.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatalf("the sender has not closed its connection to the receiver a minute after it stopped")
	}
}

// metricValue reads one sample of the process's /metrics.
func (p *daemonProcess) metricValue(t *testing.T, sample string) float64 {
	t.Helper()
	_, body, err := p.get("/metrics")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(body, "\n") {
		if strings.HasPrefix(l, sample+" ") {
			v, err := strconv.ParseFloat(strings.TrimPrefix(l, sample+" "), 64)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
	}
	return 0
}

// kill9 kills the process with SIGKILL and reaps it.
func (p *daemonProcess) kill9(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = p.cmd.Wait()
}

// TestQueueKill9DuringReplay: enrichd, as a process, takes numbered
// events over TCP into its persistent queue (sync: none) while its tcp
// output's receiver is absent, and is killed with SIGKILL. Restarted with
// the receiver up, it replays the queue, and is killed with SIGKILL again
// in the middle of the replay. Restarted once more, it replays the rest:
// the receiver holds every event (0 lost), and the duplicates (what the
// second process delivered after the last delivered position it kept:
// the cursor, written at most every 100ms while deliveries go on, and
// the segments removed) are at most what the receiver got in the last
// second before the kill. The receiver is slow (a
// millisecond's sleep every n/4000 lines: a replay of 4 s or more), so
// that the kill, 2 s into the replay, finds a second of deliveries
// behind it; a queue that replayed from the start would fail.
func TestQueueKill9DuringReplay(t *testing.T) {
	n := 500_000
	if testing.Short() {
		n = 200_000
	}
	dir := t.TempDir()
	in, out, httpAddr := freePort(t), freePort(t), freePort(t)
	cfgPath := filepath.Join(dir, "enrichd.yaml")
	writeFile(t, cfgPath, fmt.Sprintf(`
inputs:
  - {name: tcp, type: tcp, listen: %q}
outputs:
  - {name: peer, type: tcp, address: %q}
queue: {type: disk, path: queue, max_bytes: 2GiB, sync: none}
http: {listen: %q}
log: {level: info}
shutdown_timeout: 5s
`, in, out, httpAddr))
	p := startProcess(t, httpAddr, "--config", cfgPath)
	c, err := net.Dial("tcp", in)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(c, 64<<10)
	for i := range n {
		fmt.Fprintf(w, "<13>1 - h app - - - seq=%d pad=abcdefghijklmnopqrstuvwxyz0123456789\n", i)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	c.Close()
	waitMetric := func(p *daemonProcess, sample string, want float64) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Minute); p.metricValue(t, sample) < want; time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s is %v, want %v; stderr:\n%s", sample, p.metricValue(t, sample), want, p.stderr.String())
			}
		}
	}
	waitMetric(p, `enrichd_disk_queue_events_total{stage="written"}`, float64(n))
	p.kill9(t)

	rcv := newSlowSeqReceiver(t, out, n/4000)
	p = startProcess(t, httpAddr, "--config", cfgPath)
	// The receiver's count, sampled every millisecond from the first
	// event replayed until the kill.
	type sample struct {
		at time.Time
		n  int
	}
	var samples []sample
	for deadline := time.Now().Add(5 * time.Minute); ; time.Sleep(time.Millisecond) {
		d, _ := rcv.seen.Counts()
		if d > 0 {
			samples = append(samples, sample{time.Now(), d})
			if time.Since(samples[0].at) >= 2*time.Second {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the replay delivered %d of %d; stderr:\n%s", d, n, p.stderr.String())
		}
	}
	p.kill9(t)
	// What the receiver held a second before the kill had been delivered
	// by then; the cursor was written after that.
	killedAt := time.Now()
	heldBefore := 0
	for _, s := range samples {
		if killedAt.Sub(s.at) >= time.Second {
			heldBefore = s.n
		}
	}
	time.Sleep(200 * time.Millisecond) // what was in flight on the connection is read
	atKill, _ := rcv.seen.Counts()
	if atKill >= n {
		t.Fatalf("the replay was done (%d events received) before the kill", atKill)
	}
	if !strings.Contains(p.stderr.String(), "queue: replaying") {
		t.Errorf("the replay is not logged:\n%s", p.stderr.String())
	}

	p = startProcess(t, httpAddr, "--config", cfgPath)
	for deadline := time.Now().Add(5 * time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if d, _ := rcv.seen.Counts(); d >= n {
			break
		}
		if time.Now().After(deadline) {
			d, _ := rcv.seen.Counts()
			t.Fatalf("after the second restart the receiver holds %d of %d; stderr:\n%s", d, n, p.stderr.String())
		}
	}
	waitMetric(p, "enrichd_events_out_total", p.metricValue(t, `enrichd_disk_queue_events_total{stage="read"}`))
	p.stop(t)
	// The process closed its connection: the receiver reads it to its
	// end, so that what it sent last, a duplicate too, is counted.
	rcv.readToEnd(t)
	distinct, dups := rcv.seen.Counts()
	t.Logf("%d events, %d received before the second kill (%d a second before it); at the end %d distinct, %d duplicates (%.2f%%)",
		n, atKill, heldBefore, distinct, dups, 100*float64(dups)/float64(n))
	if heldBefore == 0 {
		t.Errorf("nothing received a second before the kill: the replay did not run for a second")
	}
	if dups > atKill-heldBefore {
		t.Errorf("%d duplicates: more than the %d events received in the last second before the kill (%d in all, %d a second before): the queue did not keep its delivered position (cursor file, removed segments) as deliveries went on",
			dups, atKill-heldBefore, atKill, heldBefore)
	}
	if miss := rcv.seen.Missing(n); len(miss) > 0 {
		t.Errorf("%d events lost, the first seq %d", len(miss), miss[0])
	}
	if distinct != n {
		t.Errorf("received %d distinct events, want %d", distinct, n)
	}
}
