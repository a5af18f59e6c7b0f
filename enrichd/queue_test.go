package enrichd

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// queueConfig is testConfig with the persistent queue in dir/queue and
// one tcp output to addr.
func queueConfig(t *testing.T, dir, addr string, maxBytes int) *Config {
	t.Helper()
	cfg := testConfig(t, dir, filepath.Join(dir, "unused.json"))
	cfg.Outputs = []OutputConfig{{Name: "peer", Type: "tcp", Address: addr, BufferSize: 64 << 10}}
	cfg.Queue = QueueConfig{Type: QueueDisk, Path: filepath.Join(dir, "queue"), MaxBytes: maxBytes, Sync: QueueSync{None: true}}
	must(t, cfg.Validate())
	return cfg
}

// reservePort returns a 127.0.0.1 address nothing listens on (a
// receiver started later listens on it).
func reservePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// timedSend sends events seq from..to-1 to the tcp input and reports how
// long the whole send took and its slowest write (of 64 KiB).
type sendResult struct {
	err           error
	took, written time.Duration
	slowest       time.Duration
}

func timedSend(t *testing.T, d *Daemon, from, to int) <-chan sendResult {
	c := dialTCP(t, d, "tcp")
	done := make(chan sendResult, 1)
	go func() {
		var res sendResult
		start := time.Now()
		buf := make([]byte, 0, 64<<10)
		write := func() {
			t0 := time.Now()
			if _, err := c.Write(buf); err != nil && res.err == nil {
				res.err = err
			}
			res.slowest = max(res.slowest, time.Since(t0))
			buf = buf[:0]
		}
		for i := from; i < to; i++ {
			buf = fmt.Appendf(buf, "<13>1 - h app - - - seq=%d cust=%d pad=%s\n", i, i%10+1, "abcdefghijklmnopqrstuvwxyz0123456789")
			if len(buf) > 60<<10 {
				write()
			}
		}
		write()
		res.written = time.Since(start)
		if err := c.Close(); res.err == nil {
			res.err = err
		}
		res.took = time.Since(start)
		done <- res
	}()
	return done
}

// waitFor polls cond until it holds, failing after timeout with what
// describe says.
func waitFor(t *testing.T, timeout time.Duration, cond func() bool, describe func() string) {
	t.Helper()
	for deadline := time.Now().Add(timeout); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out: %s", describe())
		}
	}
}

// queueOutage is the length of TestQueueOutputOutage's outage and the
// events sent meanwhile: 1M events and 60 s, scaled down under the race
// detector (some 10 times slower) to 200,000 and 30 s.
func queueOutage() (int, time.Duration) {
	if raceEnabled || testing.Short() {
		return 200_000, 30 * time.Second
	}
	return 1_000_000, 60 * time.Second
}

// TestQueueOutputOutage: the tcp output's receiver is absent (nothing
// listens on its port) for a minute while a million numbered events
// arrive over TCP into a queue large enough. The sender never waits: it
// has written every event, and enrichd has appended every one to the
// queue, while the output is still down (its slowest write is logged).
// Once the receiver listens, it receives every event exactly once, by
// seq, and the queue's segment files are removed.
func TestQueueOutputOutage(t *testing.T) {
	n, outage := queueOutage()
	dir := t.TempDir()
	buildCustomers(t, filepath.Join(dir, "customers.lut"), 10, 1)
	addr := reservePort(t)
	cfg := queueConfig(t, dir, addr, 2<<30)
	r, logs := startDaemonLogged(t, cfg)
	began := time.Now()

	sent := timedSend(t, r.d, 0, n)
	var res sendResult
	select {
	case res = <-sent:
	case <-time.After(outage):
		t.Fatalf("the sender was still sending %v into the outage: it blocked (events in %v)", outage,
			metric(t, r.d, `enrichd_events_in_total{input="tcp",type="tcp"}`))
	}
	if res.err != nil {
		t.Fatal(res.err)
	}
	waitFor(t, time.Until(began.Add(outage)), func() bool {
		return metric(t, r.d, `enrichd_disk_queue_events_total{stage="written"}`) == float64(n)
	}, func() string {
		return fmt.Sprintf("the queue holds %v of %d events before the output returns", metric(t, r.d, `enrichd_disk_queue_events_total{stage="written"}`), n)
	})
	if eo := metric(t, r.d, "enrichd_events_out_total"); eo != 0 {
		t.Fatalf("events_out %v while the receiver is absent", eo)
	}
	if metricSum(t, r.d, `enrichd_output_errors_total{output="peer",reason="connect"`) == 0 {
		t.Fatalf("the output never failed to connect")
	}
	qb := metric(t, r.d, "enrichd_disk_queue_bytes")
	t.Logf("%d events sent in %v (slowest write %v), %.0f MB in the queue, output down",
		n, res.took.Round(time.Millisecond), res.slowest.Round(time.Microsecond), qb/1e6)
	if rest := time.Until(began.Add(outage)); rest > 0 {
		time.Sleep(rest) // the outage lasts its full length
	}

	rcv := &lineReceiver{t: t, addr: addr}
	rcv.listen()
	waitFor(t, 10*time.Minute, func() bool { d, _ := rcv.counts(); return d >= n }, func() string {
		d, _ := rcv.counts()
		return fmt.Sprintf("the receiver holds %d of %d events", d, n)
	})
	waitFor(t, time.Minute, func() bool { return metric(t, r.d, "enrichd_events_out_total") == float64(n) }, func() string {
		return fmt.Sprintf("events_out %v, want %d", metric(t, r.d, "enrichd_events_out_total"), n)
	})
	stopAndCount(t, r, rcv, n)
	if !strings.Contains(logs.String(), "output works again") {
		t.Errorf("the output's recovery is not logged")
	}
	segs, _ := filepath.Glob(filepath.Join(cfg.Queue.Path, "*.seg"))
	if len(segs) > 1 {
		t.Errorf("%d segment files left once every event is delivered", len(segs))
	}
}

// runUntilQueued runs a daemon with the queue whose output is down,
// sends n events and waits until they are all in the queue, then shuts
// it down: the shutdown times out (the output never returns), the events
// stay in the queue, and the log says so.
func runUntilQueued(t *testing.T, cfg *Config, n int) {
	t.Helper()
	cfg.ShutdownTimeout = 2 * time.Second
	r, logs := startDaemonLogged(t, cfg)
	if res := <-timedSend(t, r.d, 0, n); res.err != nil {
		t.Fatal(res.err)
	}
	waitFor(t, 5*time.Minute, func() bool { return metric(t, r.d, `enrichd_disk_queue_events_total{stage="written"}`) == float64(n) }, func() string {
		return fmt.Sprintf("queue holds %v of %d events", metric(t, r.d, `enrichd_disk_queue_events_total{stage="written"}`), n)
	})
	r.cancel()
	r.cancel = nil
	if err := <-r.done; err == nil || !strings.Contains(err.Error(), "shutdown timed out") {
		t.Fatalf("the shutdown with the output down: %v, want it timed out", err)
	}
	// The output gives up; its events are in the queue, not lost.
	if l := logs.String(); !strings.Contains(l, "its undelivered events stay in the persistent queue") || strings.Contains(l, "events are lost") {
		t.Errorf("the shutdown's log does not say the output's events stay in the queue:\n%s", l)
	}
}

// TestQueueOneDaemonPerDir: a second daemon on the queue directory of a
// running one is refused, the error naming the directory; once the first
// stops, the directory is free. A shutdown that timed out frees it too
// (runUntilQueued, then another daemon, in TestQueueFlippedByte).
func TestQueueOneDaemonPerDir(t *testing.T) {
	dir := t.TempDir()
	buildCustomers(t, filepath.Join(dir, "customers.lut"), 10, 1)
	cfg := queueConfig(t, dir, reservePort(t), 64<<20)
	r, _ := startDaemonLogged(t, cfg)
	_, err := New(cfg, nil)
	if err == nil || !strings.Contains(err.Error(), cfg.Queue.Path+" is used by another enrichd") {
		t.Fatalf("a second daemon on the queue's directory: %v, want it refused", err)
	}
	t.Log(err)
	r.stop(t)
	r2, _ := startDaemonLogged(t, cfg)
	r2.stop(t)
}

// TestQueueFlippedByte: events wait in the queue of a daemon whose
// output is down; a byte is flipped in the middle of a segment file
// while it is stopped. The next start reports the damaged record (log
// line and metrics, marked as corruption) and replays every other one:
// the output file holds every event but those of the damaged record,
// which are one batch of consecutive seqs, as many as the metric says.
func TestQueueFlippedByte(t *testing.T) {
	const n = 50_000
	dir := t.TempDir()
	buildCustomers(t, filepath.Join(dir, "customers.lut"), 10, 1)
	cfg := queueConfig(t, dir, reservePort(t), 256<<20)
	runUntilQueued(t, cfg, n)

	segs, _ := filepath.Glob(filepath.Join(cfg.Queue.Path, "*.seg"))
	sort.Strings(segs)
	var biggest string
	var size int64
	for _, s := range segs {
		if fi, err := os.Stat(s); err == nil && fi.Size() > size {
			biggest, size = s, fi.Size()
		}
	}
	b, err := os.ReadFile(biggest)
	must(t, err)
	b[len(b)/2] ^= 0x04
	must(t, os.WriteFile(biggest, b, 0o640))

	out := filepath.Join(dir, "out.json")
	cfg2 := testConfig(t, dir, out)
	cfg2.Queue = cfg.Queue
	must(t, cfg2.Validate())
	r, logs := startDaemonLogged(t, cfg2)
	var damagedEv float64
	waitFor(t, 5*time.Minute, func() bool {
		damagedEv = metric(t, r.d, "enrichd_disk_queue_damaged_events_total")
		return damagedEv > 0 && metric(t, r.d, "enrichd_events_out_total")+damagedEv >= n
	}, func() string {
		return fmt.Sprintf("events_out %v, damaged %v, want %d in all", metric(t, r.d, "enrichd_events_out_total"), damagedEv, n)
	})
	if d := metric(t, r.d, "enrichd_disk_queue_damaged_records_total"); d != 1 {
		t.Errorf("damaged records %v, want 1", d)
	}
	if damagedEv > DefaultBatchSize {
		t.Errorf("the damaged record held %v events, more than a batch (%d)", damagedEv, DefaultBatchSize)
	}
	r.stop(t)
	if !strings.Contains(logs.String(), "damaged record skipped") || !strings.Contains(logs.String(), "corrupt queue record") {
		t.Errorf("the damage is not logged:\n%s", logs.String())
	}
	seen := map[int]int{}
	st := readFileState(t, out)
	for _, l := range st.lines {
		if seq, ok := seqOf(t, l); ok {
			seen[seq]++
		}
	}
	var missing []int
	for i := range n {
		switch seen[i] {
		case 0:
			missing = append(missing, i)
		case 1:
		default:
			t.Errorf("seq %d replayed %d times", i, seen[i])
		}
	}
	if len(missing) != int(damagedEv) || len(missing) == 0 || missing[len(missing)-1]-missing[0] != len(missing)-1 {
		t.Fatalf("missing %d events (%v...), the damaged record held %v: want one run of consecutive seqs", len(missing), missing[:min(5, len(missing))], damagedEv)
	}
	t.Logf("flipped byte at %s+%d: %d events of one record skipped (seq %d-%d), %d replayed", filepath.Base(biggest), len(b)/2,
		len(missing), missing[0], missing[len(missing)-1], len(st.lines))
	if len(st.lines) != n-len(missing) {
		t.Errorf("the file holds %d lines, want %d", len(st.lines), n-len(missing))
	}
}

// TestQueueZeroTail: events wait in the queue of a daemon whose output
// is down; while it is stopped, the last segment file is lengthened with
// zeros, as a crash of the system leaves records that were not yet on
// the disk. The next start cuts them off with a warning naming the file,
// the offset and the bytes cut, counts them in
// enrichd_disk_queue_torn_records_total, and replays every event.
func TestQueueZeroTail(t *testing.T) {
	const n = 2000
	dir := t.TempDir()
	buildCustomers(t, filepath.Join(dir, "customers.lut"), 10, 1)
	cfg := queueConfig(t, dir, reservePort(t), 256<<20)
	runUntilQueued(t, cfg, n)

	segs, _ := filepath.Glob(filepath.Join(cfg.Queue.Path, "*.seg"))
	sort.Strings(segs)
	last := segs[len(segs)-1]
	fi, err := os.Stat(last)
	must(t, err)
	must(t, os.Truncate(last, fi.Size()+5000))

	out := filepath.Join(dir, "out.json")
	cfg2 := testConfig(t, dir, out)
	cfg2.Queue = cfg.Queue
	must(t, cfg2.Validate())
	r, logs := startDaemonLogged(t, cfg2)
	waitFor(t, 2*time.Minute, func() bool { return metric(t, r.d, "enrichd_events_out_total") >= n }, func() string {
		return fmt.Sprintf("events_out %v, want %d", metric(t, r.d, "enrichd_events_out_total"), n)
	})
	if torn := metric(t, r.d, "enrichd_disk_queue_torn_records_total"); torn != 1 {
		t.Errorf("enrichd_disk_queue_torn_records_total %v, want 1", torn)
	}
	if d := metric(t, r.d, "enrichd_disk_queue_damaged_records_total"); d != 0 {
		t.Errorf("enrichd_disk_queue_damaged_records_total %v, want 0", d)
	}
	r.stop(t)
	want := fmt.Sprintf("level=WARN msg=\"queue: zeros where records were written are cut off: the system crashed before they were on the disk, and events may be lost\" queue=%s file=%s offset=%d bytes=5000",
		cfg.Queue.Path, last, fi.Size())
	if !strings.Contains(logs.String(), want) {
		t.Errorf("the zeros cut off are not logged as\n%s\nlog:\n%s", want, logs.String())
	}
	if st := readFileState(t, out); len(st.lines) != n {
		t.Errorf("the file holds %d lines, want %d", len(st.lines), n)
	}
}

// TestQueueDiskFull: the queue's directory is a 6 MiB tmpfs, smaller
// than the events sent while the output is down, and smaller than
// max_bytes. The writes fail with ENOSPC: counted by reason and logged,
// enrichd_disk_queue_write_failing is 1 and /readyz answers 503, the
// inputs wait, nothing is dropped. Once the receiver listens, the queue
// delivers, its segments are removed, the writes resume by themselves
// (the gauge 0, /readyz 200): the receiver holds every event exactly
// once.
func TestQueueDiskFull(t *testing.T) {
	const n = 60_000
	dir := t.TempDir()
	buildCustomers(t, filepath.Join(dir, "customers.lut"), 10, 1)
	disk := filepath.Join(dir, "disk")
	must(t, os.Mkdir(disk, 0o755))
	mountTmpfs(t, disk, "6m")
	addr := reservePort(t)
	cfg := queueConfig(t, dir, addr, 256<<20)
	cfg.Queue.Path = disk
	cfg.Queue.Sync = QueueSync{Events: 1000}
	r, logs := startDaemonLogged(t, cfg)
	sent := timedSend(t, r.d, 0, n)
	enospc := func() float64 { return metric(t, r.d, `enrichd_disk_queue_write_errors_total{reason="enospc"}`) }
	waitFor(t, 2*time.Minute, func() bool { return enospc() > 0 }, func() string {
		return fmt.Sprintf("no enospc counted; %v events written to the queue", metric(t, r.d, `enrichd_disk_queue_events_total{stage="written"}`))
	})
	written := metric(t, r.d, `enrichd_disk_queue_events_total{stage="written"}`)
	if written >= n {
		t.Fatalf("the disk never filled: %v events written", written)
	}
	if !strings.Contains(logs.String(), "reason=enospc") {
		t.Errorf("the write error is not logged with its reason:\n%s", logs.String())
	}
	t.Logf("disk full after %v events", written)
	failing := func() float64 { return metric(t, r.d, "enrichd_disk_queue_write_failing") }
	waitFor(t, time.Minute, func() bool { return failing() == 1 }, func() string { return "enrichd_disk_queue_write_failing is not 1" })
	if r.d.Ready() {
		t.Errorf("ready while the queue cannot write")
	}
	if code, body := httpGet(t, r.d, "/readyz"); code != 503 || !strings.Contains(body, "queue cannot write") {
		t.Errorf("/readyz: %d %q", code, body)
	}

	rcv := &lineReceiver{t: t, addr: addr}
	rcv.listen()
	res := <-sent
	if res.err != nil {
		t.Fatal(res.err)
	}
	waitFor(t, 5*time.Minute, func() bool { d, _ := rcv.counts(); return d >= n }, func() string {
		d, _ := rcv.counts()
		return fmt.Sprintf("the receiver holds %d of %d events; queue %v written", d, n, metric(t, r.d, `enrichd_disk_queue_events_total{stage="written"}`))
	})
	if !strings.Contains(logs.String(), "queue: works again") {
		t.Errorf("the recovery is not logged")
	}
	if f := failing(); f != 0 || !r.d.Ready() {
		t.Errorf("once the writes work again: enrichd_disk_queue_write_failing %v, ready %v", f, r.d.Ready())
	}
	stopAndCount(t, r, rcv, n)
}

// TestQueueFull: a queue whose max_bytes is smaller than what arrives
// while the output is down fills: enrichd_disk_queue_full is 1, the log says
// so, /readyz answers 503 and the sender waits; once the receiver
// listens everything arrives, once, and /readyz answers 200 again.
func TestQueueFull(t *testing.T) {
	dir := t.TempDir()
	buildCustomers(t, filepath.Join(dir, "customers.lut"), 10, 1)
	addr := reservePort(t)
	queueFull(t, addr, queueConfig(t, dir, addr, 24<<20), 300_000)
}

// TestQueueFullSmall: TestQueueFull with the smallest queue the
// configuration allows for batches of 8 KiB (768 KiB, under the least
// segment size by default): once the receiver listens, delivered
// segments make room again and everything arrives.
func TestQueueFullSmall(t *testing.T) {
	dir := t.TempDir()
	buildCustomers(t, filepath.Join(dir, "customers.lut"), 10, 1)
	addr := reservePort(t)
	cfg := queueConfig(t, dir, addr, 24<<20)
	cfg.Queue.MaxBytes, cfg.Pipeline.BatchBytes = 768<<10, 8<<10
	must(t, cfg.Validate())
	queueFull(t, addr, cfg, 200_000)
}

// queueFull sends n events through a daemon of cfg whose output's
// receiver (at addr) is absent until its queue is full.
func queueFull(t *testing.T, addr string, cfg *Config, n int) {
	t.Helper()
	r, logs := startDaemonLogged(t, cfg)
	sent := timedSend(t, r.d, 0, n)
	waitFor(t, 2*time.Minute, func() bool { return metric(t, r.d, "enrichd_disk_queue_full") == 1 }, func() string {
		return fmt.Sprintf("queue never full: %v bytes", metric(t, r.d, "enrichd_disk_queue_bytes"))
	})
	if r.d.Ready() {
		t.Errorf("ready while the queue is full")
	}
	code, body := httpGet(t, r.d, "/readyz")
	if code != 503 || !strings.Contains(body, "queue is full") {
		t.Errorf("/readyz: %d %q", code, body)
	}
	select {
	case res := <-sent:
		t.Fatalf("the sender finished (%v) while the queue is full", res.err)
	default:
	}
	if !strings.Contains(logs.String(), "queue: full") {
		t.Errorf("the full queue is not logged")
	}
	rcv := &lineReceiver{t: t, addr: addr}
	rcv.listen()
	select {
	case res := <-sent:
		if res.err != nil {
			t.Fatal(res.err)
		}
	case <-time.After(3 * time.Minute):
		d, _ := rcv.counts()
		t.Fatalf("the sender still waits 3 minutes after the receiver listens: the receiver holds %d of %d events, the queue %v bytes (full %v)",
			d, n, metric(t, r.d, "enrichd_disk_queue_bytes"), metric(t, r.d, "enrichd_disk_queue_full"))
	}
	waitFor(t, 5*time.Minute, func() bool { d, _ := rcv.counts(); return d >= n }, func() string {
		d, _ := rcv.counts()
		return fmt.Sprintf("the receiver holds %d of %d", d, n)
	})
	waitFor(t, time.Minute, r.d.Ready, func() string { return "not ready again" })
	stopAndCount(t, r, rcv, n)
}

// stopAndCount stops the daemon, lets the receiver read its connection
// to the end (what was sent last, a duplicate too, is counted), and
// checks that it holds every event of seq 0..n-1 exactly once.
func stopAndCount(t *testing.T, r *running, rcv *lineReceiver, n int) {
	t.Helper()
	r.stop(t)
	rcv.readToEnd(t)
	if d, dups := rcv.counts(); d != n || dups != 0 {
		t.Errorf("the receiver holds %d distinct events (%d twice), want %d once each", d, dups, n)
	}
	// The counters agree with the receiver.
	if out := r.d.eventsOut.Load(); out != uint64(n) {
		t.Errorf("events_out %d, the receiver holds %d", out, n)
	}
	if got := r.d.queue.st.Stats().Delivered; got != uint64(n) {
		t.Errorf("the queue counts %d events delivered, the receiver holds %d", got, n)
	}
	for i := range n {
		if got := rcv.seen.Seen(i); got != 1 {
			t.Fatalf("seq %d received %d times", i, got)
		}
	}
}

// httpGet returns the status and body of a GET of path on the daemon.
func httpGet(t *testing.T, d *Daemon, path string) (int, string) {
	t.Helper()
	resp, err := http.Get("http://" + d.HTTPAddr().String() + path)
	must(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	must(t, err)
	return resp.StatusCode, string(b)
}
