package enrichd

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lutkit/lutkit/internal/seqtally"

	"github.com/lutkit/lutkit/internal/testfiles"
)

// metricSum returns the sum of the samples of /metrics whose name and
// labels start with prefix, e.g. `enrichd_output_errors_total{output="x"`.
func metricSum(t testing.TB, d *Daemon, prefix string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + d.HTTPAddr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	sum := 0.0
	for _, l := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(l, prefix) {
			v, err := strconv.ParseFloat(l[strings.LastIndexByte(l, ' ')+1:], 64)
			if err != nil {
				t.Fatalf("metric line %q: %v", l, err)
			}
			sum += v
		}
	}
	return sum
}

// mountTmpfs mounts a tmpfs of size at dir until the test ends. Without
// root (or mount) the test fails under CI=true and skips elsewhere.
func mountTmpfs(t *testing.T, dir, size string) {
	t.Helper()
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput()
	if err != nil {
		testfiles.Missing(t, fmt.Sprintf("a tmpfs mounted by the test (run as root): mount: %v: %s", err, out))
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
}

// fileState is what a file output's file holds: its whole lines, and
// whether it ends inside a line.
type fileState struct {
	lines [][]byte
	torn  bool
}

func readFileState(t *testing.T, path string) fileState {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var st fileState
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			st.torn = true
			break
		}
		st.lines = append(st.lines, b[:i])
		b = b[i+1:]
	}
	return st
}

var msgSeqRE = regexp.MustCompile(`seq=(\d+) `)

// seqOf returns the seq of an output line, checking that it is valid
// JSON.
func seqOf(t *testing.T, line []byte) (int, bool) {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(line, &m); err != nil {
		t.Errorf("invalid JSON line (torn?): %v: %.200q", err, line)
		return 0, false
	}
	msg, _ := m["message"].(string)
	sm := msgSeqRE.FindStringSubmatch(msg + " ")
	if sm == nil {
		t.Errorf("no seq in %.200q", line)
		return 0, false
	}
	n, _ := strconv.Atoi(sm[1])
	return n, true
}

// streamEvents sends events seq from..to-1 to the daemon's tcp input, as
// fast as it takes them, and reports the error of the connection.
func streamEvents(t *testing.T, d *Daemon, from, to int) <-chan error {
	c := dialTCP(t, d, "tcp")
	done := make(chan error, 1)
	go func() {
		w := bufio.NewWriterSize(c, 64<<10)
		for i := from; i < to; i++ {
			fmt.Fprintf(w, "<13>1 - h app - - - seq=%d cust=%d pad=%s\n", i, i%10+1, "abcdefghijklmnopqrstuvwxyz0123456789")
		}
		err := w.Flush()
		if cerr := c.Close(); err == nil {
			err = cerr
		}
		done <- err
	}()
	return done
}

// streamEventsCounted is streamEvents that hands the events to the
// kernel 100 at a time and stores in written how many it has: the events
// from written.Load()+100 on leave the sender after that load.
func streamEventsCounted(t *testing.T, d *Daemon, from, to int, written *atomic.Int64) <-chan error {
	c := dialTCP(t, d, "tcp")
	done := make(chan error, 1)
	go func() {
		w := bufio.NewWriterSize(c, 64<<10)
		var err error
		for i := from; i < to && err == nil; i++ {
			fmt.Fprintf(w, "<13>1 - h app - - - seq=%d cust=%d pad=%s\n", i, i%10+1, "abcdefghijklmnopqrstuvwxyz0123456789")
			if (i+1-from)%100 == 0 {
				err = w.Flush()
				written.Store(int64(i + 1))
			}
		}
		if err == nil {
			err = w.Flush()
		}
		if cerr := c.Close(); err == nil {
			err = cerr
		}
		done <- err
	}()
	return done
}

// TestFileOutputDiskFull: a file output on a real 2 MiB tmpfs that fills
// up during a stream of numbered events. The write error is logged and
// counted (reason enospc), events_out never exceeds the whole lines the
// file holds (sampled while the disk is full), no line is ever torn, and
// once space is freed the output resumes by itself: every event in the
// file, valid JSON, exactly once (a torn line is cut back and written
// again from its start, so nothing is written twice).
func TestFileOutputDiskFull(t *testing.T) {
	dir := t.TempDir()
	buildCustomers(t, filepath.Join(dir, "customers.lut"), 10, 1)
	disk := filepath.Join(dir, "disk")
	must(t, os.Mkdir(disk, 0o755))
	mountTmpfs(t, disk, "2m")
	out := filepath.Join(disk, "out.json")
	cfg := testConfig(t, dir, out)
	cfg.Outputs = []OutputConfig{{Name: "disk", Type: "file", Path: out, BufferSize: 64 << 10}}
	// The filler leaves about 650 kB free; the events need about 1.5 MB.
	filler := filepath.Join(disk, "filler")
	must(t, os.WriteFile(filler, make([]byte, 1400<<10), 0o644))
	r, logs := startDaemonLogged(t, cfg)

	const n = 5000
	sent := streamEvents(t, r.d, 0, n)
	errs := func() float64 {
		return metric(t, r.d, `enrichd_output_errors_total{output="disk",reason="enospc",type="file"}`)
	}
	deadline := time.Now().Add(60 * time.Second)
	for errs() == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no enospc error counted; file holds %d lines", len(readFileState(t, out).lines))
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The disk is full: the counters must not run ahead of the file.
	for range 20 {
		eo := metric(t, r.d, "enrichd_events_out_total")
		oe := metric(t, r.d, `enrichd_output_events_total{output="disk",type="file"}`)
		st := readFileState(t, out)
		if eo > float64(len(st.lines)) || oe > float64(len(st.lines)) {
			t.Fatalf("disk full: events_out %v, output_events %v, but the file holds %d lines", eo, oe, len(st.lines))
		}
		time.Sleep(50 * time.Millisecond)
	}
	full := readFileState(t, out)
	if len(full.lines) >= n {
		t.Fatalf("the disk never filled: %d lines", len(full.lines))
	}
	if !strings.Contains(logs.String(), "reason=enospc") || !strings.Contains(logs.String(), "output=disk") {
		t.Errorf("the write error is not logged with its reason and output:\n%s", logs.String())
	}
	t.Logf("disk full: %d of %d events in the file, %v enospc errors", len(full.lines), n, errs())

	// Free the space: the output resumes by itself.
	must(t, os.Remove(filler))
	deadline = time.Now().Add(120 * time.Second)
	for metric(t, r.d, "enrichd_events_out_total") < n {
		if time.Now().After(deadline) {
			t.Fatalf("after freeing space: events_out %v, file %d lines, want %d",
				metric(t, r.d, "enrichd_events_out_total"), len(readFileState(t, out).lines), n)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := <-sent; err != nil {
		t.Fatalf("sending: %v", err)
	}
	if !strings.Contains(logs.String(), "output works again") {
		t.Errorf("the recovery is not logged")
	}
	if oe := metric(t, r.d, `enrichd_output_events_total{output="disk",type="file"}`); oe != n {
		t.Errorf("output_events_total %v, want %d", oe, n)
	}
	r.stop(t)
	st := readFileState(t, out)
	if st.torn {
		t.Errorf("the file ends inside a line")
	}
	seen := make([]int, n)
	for _, l := range st.lines {
		if seq, ok := seqOf(t, l); ok && seq < n {
			seen[seq]++
		}
	}
	for i, c := range seen {
		if c != 1 {
			t.Errorf("seq %d is in the file %d times, want once", i, c)
		}
	}
	if len(st.lines) != n {
		t.Errorf("the file holds %d lines, want %d", len(st.lines), n)
	}
}

// lineReceiver is a TCP peer that counts the whole lines it reads, by
// seq, and can be killed: its listener and its connection closed at once,
// whatever it has not read yet is lost.
type lineReceiver struct {
	t    *testing.T
	addr string
	seen seqtally.Tally
	mu   sync.Mutex
	ln   net.Listener
	conn net.Conn
	// lines counts the whole lines read on the current connection.
	lines int
	wg    sync.WaitGroup
}

func newLineReceiver(t *testing.T) *lineReceiver {
	r := &lineReceiver{t: t, addr: "127.0.0.1:0"}
	r.listen()
	return r
}

func (r *lineReceiver) listen() {
	ln, err := net.Listen("tcp", r.addr)
	if err != nil {
		r.t.Fatal(err)
	}
	r.addr = ln.Addr().String()
	r.mu.Lock()
	r.ln = ln
	r.mu.Unlock()
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			r.mu.Lock()
			r.conn, r.lines = c, 0
			r.mu.Unlock()
			r.wg.Add(1)
			go r.read(c)
		}
	}()
}

func (r *lineReceiver) read(c net.Conn) {
	defer r.wg.Done()
	br := bufio.NewReaderSize(c, 64<<10)
	for {
		l, err := br.ReadSlice('\n')
		if err != nil {
			return // a torn last line is not counted
		}
		m := msgSeqRE.FindSubmatch(l)
		if m == nil {
			r.t.Errorf("received a line without seq: %.200q", l)
			continue
		}
		seq, _ := strconv.Atoi(string(m[1]))
		r.seen.Add(seq)
		r.mu.Lock()
		if r.conn == c {
			r.lines++
		}
		r.mu.Unlock()
	}
}

// connLines is how many lines the current connection delivered (0
// before one is accepted).
func (r *lineReceiver) connLines() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.conn == nil {
		return 0
	}
	return r.lines
}

// kill closes the listener, then the connection (so that the sender
// cannot reconnect before the receiver is back).
func (r *lineReceiver) kill() {
	r.mu.Lock()
	ln, c := r.ln, r.conn
	r.conn, r.lines = nil, 0
	r.mu.Unlock()
	ln.Close()
	if c != nil {
		c.Close()
	}
}

func (r *lineReceiver) counts() (distinct, dups int) { return r.seen.Counts() }

// readToEnd closes the listener and waits until the reader of every
// connection has reached its end, which the sender's close marks: then
// every whole line sent is counted, the last ones (a duplicate among
// them) too. A connection still open a minute later is closed and the
// test fails.
func (r *lineReceiver) readToEnd(t *testing.T) {
	t.Helper()
	r.mu.Lock()
	r.ln.Close()
	r.mu.Unlock()
	done := make(chan struct{})
	go func() { r.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		r.kill()
		<-done
		t.Errorf("the sender has not closed its connection to the receiver a minute after it stopped")
	}
}

// TestTCPOutputPeerRestarts: the tcp output's receiver, a real TCP peer
// that counts the lines it reads, is killed (listener and connection
// closed, what it has not read lost) and restarted three times in the
// middle of a stream of numbered events. What the docs state is what the
// receiver holds: each break is counted, the events lost are no more than
// the output counts as possibly lost (received + possibly_lost >= sent),
// none is received twice, and what was not written before a break is
// written after it (every event the sender wrote after the last restart
// arrives: all are checked, not only the last ones).
func TestTCPOutputPeerRestarts(t *testing.T) {
	dir := t.TempDir()
	buildCustomers(t, filepath.Join(dir, "customers.lut"), 10, 1)
	rcv := newLineReceiver(t)
	cfg := testConfig(t, dir, filepath.Join(dir, "unused.json"))
	cfg.Outputs = []OutputConfig{{Name: "peer", Type: "tcp", Address: rcv.addr, BufferSize: 64 << 10}}
	r, _ := startDaemonLogged(t, cfg)

	// The kernel's buffers on loopback hold up to some 40,000 events: enough
	// are sent that every kill comes mid-stream.
	const n, kills = 250000, 3
	var written atomic.Int64
	sent := streamEventsCounted(t, r.d, 0, n, &written)
	var afterRestart int // the first event the sender wrote after the last restart
	for k := range kills {
		// Each connection dies after a different number of lines.
		want := 3000 + 3000*k
		deadline := time.Now().Add(120 * time.Second)
		for rcv.connLines() < want {
			if time.Now().After(deadline) {
				t.Fatalf("kill %d: the connection delivered %d lines, want %d", k+1, rcv.connLines(), want)
			}
			time.Sleep(time.Millisecond)
		}
		connectErrs := func() float64 {
			return metricSum(t, r.d, `enrichd_output_errors_total{output="peer",reason="connect"`)
		}
		before := connectErrs()
		rcv.kill()
		// Down long enough for the output to find it gone and retry.
		deadline = time.Now().Add(60 * time.Second)
		for connectErrs() == before {
			if time.Now().After(deadline) {
				t.Fatalf("kill %d: no connect error counted", k+1)
			}
			time.Sleep(5 * time.Millisecond)
		}
		rcv.listen()
		afterRestart = int(written.Load()) + 100
	}
	if afterRestart >= n {
		t.Fatalf("the sender had written every event before the last restart: nothing shows what arrives after it")
	}
	if err := <-sent; err != nil {
		t.Fatalf("sending: %v", err)
	}
	deadline := time.Now().Add(120 * time.Second)
	for metric(t, r.d, "enrichd_events_out_total") < n {
		if time.Now().After(deadline) {
			t.Fatalf("events_out %v, want %d", metric(t, r.d, "enrichd_events_out_total"), n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	breaks := metric(t, r.d, `enrichd_output_connection_breaks_total{output="peer"}`)
	lost := metric(t, r.d, `enrichd_output_events_possibly_lost_total{output="peer"}`)
	reconnects := metric(t, r.d, `enrichd_output_reconnects_total{output="peer"}`)
	r.stop(t) // flushes and closes the last connection: the receiver reads it all
	rcv.readToEnd(t)
	distinct, dups := rcv.counts()
	t.Logf("sent %d, received %d (%d twice), lost %d, counted possibly lost %v, breaks %v, connections %v",
		n, distinct, dups, n-distinct, lost, breaks, reconnects)
	if breaks != kills {
		t.Errorf("connection breaks %v, want %d (the kills)", breaks, kills)
	}
	if reconnects != kills+1 {
		t.Errorf("connections %v, want %d", reconnects, kills+1)
	}
	if float64(distinct)+lost < n {
		t.Errorf("received %d + possibly lost %v < sent %d: events lost uncounted", distinct, lost, n)
	}
	if dups != 0 {
		t.Errorf("%d events received twice", dups)
	}
	// Every event the sender wrote after the last restart arrives (once:
	// duplicates are counted above).
	var missing []int
	for i := afterRestart; i < n; i++ {
		if rcv.seen.Seen(i) == 0 {
			missing = append(missing, i)
		}
	}
	if len(missing) > 0 {
		t.Errorf("%d of the %d events written after the last restart did not arrive, the first seq %d",
			len(missing), n-afterRestart, missing[0])
	}
	t.Logf("%d events written after the last restart (seq %d on), all checked", n-afterRestart, afterRestart)
}
