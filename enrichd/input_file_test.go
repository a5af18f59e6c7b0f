package enrichd

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// gatedReceiver is a TCP peer that accepts one connection and reads no
// byte of it until released; then it keeps the whole lines it reads.
type gatedReceiver struct {
	ln      net.Listener
	release chan struct{}
	done    chan struct{}
	mu      sync.Mutex
	lines   [][]byte
}

func newGatedReceiver(t *testing.T) *gatedReceiver {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	r := &gatedReceiver{ln: ln, release: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(r.done)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		<-r.release
		br := bufio.NewReader(c)
		for {
			l, err := br.ReadBytes('\n')
			if err != nil {
				return // a torn last line is not kept
			}
			r.mu.Lock()
			r.lines = append(r.lines, l[:len(l)-1])
			r.mu.Unlock()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return r
}

func (r *gatedReceiver) held() [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([][]byte(nil), r.lines...)
}

// TestFileInputTruncatedUnderReader truncates a file input's file in the
// middle of a line, ahead of where the input reads, while the input is
// held back by its output (a TCP peer that reads nothing). The input reads
// on to the new end and stops there: the peer holds every line before the
// cut once, then the cut line as far as the cut (a final line without
// newline), and nothing of what the file held past it; events_in and the
// delivered counts are what the peer holds.
func TestFileInputTruncatedUnderReader(t *testing.T) {
	const n = 400_000
	dir := t.TempDir()
	in := filepath.Join(dir, "in.log")
	var file bytes.Buffer
	starts := make([]int, n+1) // starts[i]: the offset of line i
	for i := range n {
		starts[i] = file.Len()
		fmt.Fprintf(&file, "seq=%d pad=abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz\n", i)
	}
	starts[n] = file.Len()
	must(t, os.WriteFile(in, file.Bytes(), 0o644))

	rcv := newGatedReceiver(t)
	// A tcp input besides the file keeps the daemon running after the
	// file's end, so that its counters can be read.
	yml := fmt.Sprintf(`
inputs:
  - {name: tcp, type: tcp, listen: "127.0.0.1:0"}
  - {name: file, type: file, path: %q, max_message_size: 4096}
outputs:
  - {name: peer, type: tcp, address: %q}
http: {listen: "127.0.0.1:0"}
drain_read_grace: 300ms
`, in, rcv.ln.Addr().String())
	cfg, err := ParseConfig(filepath.Join(dir, "enrichd.yaml"), []byte(yml))
	must(t, err)
	r := startDaemon(t, cfg)

	// Wait until the input is held back: its count still for 2 s.
	const eventsIn = `enrichd_events_in_total{input="file",type="file"}`
	var read float64
	for deadline, still := time.Now().Add(2*time.Minute), time.Now(); time.Since(still) < 2*time.Second; time.Sleep(100 * time.Millisecond) {
		if v := metric(t, r.d, eventsIn); v != read || v == 0 {
			read, still = v, time.Now()
		}
		if time.Now().After(deadline) {
			t.Fatalf("the input was never held back: %v events in", read)
		}
	}
	// The input reads at most its buffer (max_message_size) ahead of the
	// events it counted; cut 20,000 lines further, inside line m.
	m := int(read) + 20_000
	if m >= n {
		t.Fatalf("the input read %v of %d lines before its output held it back: the file is too small for the test", read, n)
	}
	cut := starts[m] + (starts[m+1]-starts[m])/2
	must(t, os.Truncate(in, int64(cut)))
	close(rcv.release)

	want := m + 1
	waitFor(t, 2*time.Minute, func() bool { return len(rcv.held()) >= want }, func() string {
		return fmt.Sprintf("the peer holds %d events, want %d", len(rcv.held()), want)
	})
	// The input ended at the cut: nothing more comes.
	time.Sleep(500 * time.Millisecond)
	held := rcv.held()
	if len(held) != want {
		t.Fatalf("the peer holds %d events, want %d (the lines before the cut and the cut line)", len(held), want)
	}
	seen := make([]int, m)
	var cutMsg string
	for _, l := range held {
		msg, _ := decode(t, string(l))["message"].(string)
		if sm := seqRE.FindStringSubmatch(msg); sm != nil {
			if seq, _ := strconv.Atoi(sm[1]); seq < m && msg == string(bytes.TrimSuffix(file.Bytes()[starts[seq]:starts[seq+1]], []byte("\n"))) {
				seen[seq]++
				continue
			}
		}
		if cutMsg != "" {
			t.Errorf("an event that is neither a whole line before the cut nor the cut line: %q", msg)
		}
		cutMsg = msg
	}
	for seq, c := range seen {
		if c != 1 {
			t.Errorf("line %d delivered %d times, want once", seq, c)
		}
	}
	if wantCut := string(file.Bytes()[starts[m]:cut]); cutMsg != wantCut {
		t.Errorf("the cut line delivered as %q, want %q", cutMsg, wantCut)
	}
	if v := metric(t, r.d, eventsIn); v != float64(want) {
		t.Errorf("events_in %v, but the peer holds %d events", v, want)
	}
	checkDeliveredCount(t, r.d, want)
	t.Logf("held back after %v lines; cut inside line %d; the peer holds %d events", read, m, len(held))
}

// TestFileInputDirectory: a file input whose path is a directory is
// refused at start, naming it; it used to start, fail at its first read
// and let the daemon end at once with success, having read nothing.
func TestFileInputDirectory(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out.json")
	cfg, err := ParseConfig("t.yaml", []byte(fmt.Sprintf("inputs: [{type: file, path: %q}]\noutputs: [{type: file, path: %q}]\n", dir, out)))
	if err != nil {
		t.Fatal(err)
	}
	d, err := New(cfg, nil)
	if err == nil {
		err = d.Run(t.Context())
		t.Fatalf("New accepted a directory as a file input's path; Run: %v", err)
	}
	if want := dir + " is a directory"; !strings.Contains(err.Error(), want) {
		t.Fatalf("New: %v; want it to say %q", err, want)
	}
}
