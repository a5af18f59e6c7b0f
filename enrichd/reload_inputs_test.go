package enrichd

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// inputsConfig is a configuration with the TCP inputs given (YAML flow
// mappings, one a line), no rules and a file output.
func inputsConfig(out string, inputs ...string) string {
	return fmt.Sprintf(`
inputs:
  - %s
outputs:
  - {type: file, path: %q}
http: {listen: "127.0.0.1:0"}
drain_read_grace: 300ms
`, strings.Join(inputs, "\n  - "), out)
}

// streamSender sends numbered events "seq=N src=NAME" over one TCP
// connection, a few at a time, until stop is closed and at least min are
// sent; sent is how many it sent, err what went wrong.
type streamSender struct {
	name string
	stop chan struct{}
	done chan struct{}
	sent atomic.Int64
	err  error
}

func startStream(addr net.Addr, name string, min int) *streamSender {
	s := &streamSender{name: name, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		c, err := net.Dial("tcp", addr.String())
		if err != nil {
			s.err = err
			return
		}
		defer c.Close()
		w := bufio.NewWriter(c)
		for i := 0; ; i++ {
			if i >= min && i%50 == 0 {
				select {
				case <-s.stop:
					s.err = w.Flush()
					return
				default:
				}
			}
			fmt.Fprintf(w, "<134>1 2026-11-30T05:24:00.000Z h app 1 m - seq=%d src=%s\n", i, name)
			s.sent.Store(int64(i + 1))
			if i%20 == 19 {
				// About 20 events a millisecond at most: the reloads
				// happen while it streams, and the output stays small.
				if err := w.Flush(); err != nil {
					s.err = err
					return
				}
				time.Sleep(time.Millisecond)
			}
		}
	}()
	return s
}

// end stops the sender and returns how many events it sent.
func (s *streamSender) end(t *testing.T) int {
	t.Helper()
	close(s.stop)
	<-s.done
	if s.err != nil {
		t.Fatalf("sender %s: %v (after %d events)", s.name, s.err, s.sent.Load())
	}
	return int(s.sent.Load())
}

// countSources counts the events of each source (src=NAME) by seq in the
// output file.
func countSources(t *testing.T, path string) map[string]map[int]int {
	t.Helper()
	counts := map[string]map[int]int{}
	for _, l := range readLines(t, path) {
		msg, _ := decode(t, l)["message"].(string)
		var seq int
		var src string
		if _, err := fmt.Sscanf(msg, "seq=%d src=%s", &seq, &src); err != nil {
			t.Fatalf("bad event %s", l)
		}
		if counts[src] == nil {
			counts[src] = map[int]int{}
		}
		counts[src][seq]++
	}
	return counts
}

// exactlyOnce fails unless seqs 0..n-1 of src were each counted once.
func exactlyOnce(t *testing.T, counts map[string]map[int]int, src string, n int) {
	t.Helper()
	c := counts[src]
	if len(c) != n {
		t.Errorf("source %s: %d distinct seqs, want %d", src, len(c), n)
	}
	for seq := range n {
		if c[seq] != 1 {
			t.Errorf("source %s: seq %d counted %d times", src, seq, c[seq])
			return
		}
	}
}

// TestReloadInputsUnderLoad streams numbered events into inputs a and c
// while a reload adds input b (a new port) and a second removes a. The
// sender on a, which stops writing before the removal, sees its
// connection closed once the drain has read everything it sent, then
// reconnects to b and goes on; the sender on c streams over one
// connection across both reloads. Every seq of both arrives exactly once;
// c's listener accepted one connection in all; the reloads are logged and
// counted with the inputs they started and stopped.
func TestReloadInputsUnderLoad(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out.json")
	a := `{name: a, type: tcp, listen: "127.0.0.1:0"}`
	b := `{name: b, type: tcp, listen: "127.0.0.1:0"}`
	c := `{name: c, type: tcp, listen: "127.0.0.1:0"}`
	r, path, logs := startOutputs(t, dir, inputsConfig(out, a, c))
	load := func() (*Config, error) { return LoadConfig(path) }
	cSender := startStream(r.d.Addr("c"), "c", 2000)
	const half = 3000
	aAddr := r.d.Addr("a")
	conn, err := net.Dial("tcp", aAddr.String())
	must(t, err)
	w := bufio.NewWriter(conn)
	sendA := func(from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			fmt.Fprintf(w, "<134>1 2026-11-30T05:24:00.000Z h app 1 m - seq=%d src=a\n", i)
			if i%20 == 19 {
				must(t, w.Flush())
				time.Sleep(time.Millisecond)
			}
		}
		must(t, w.Flush())
	}
	// The first reload adds b while a streams.
	reloaded := make(chan error, 1)
	go func() {
		for cSender.sent.Load() < 1000 {
			time.Sleep(time.Millisecond)
		}
		if err := os.WriteFile(path, []byte(inputsConfig(out, a, b, c)), 0o644); err != nil {
			reloaded <- err
			return
		}
		reloaded <- r.d.Reload(load)
	}()
	sendA(0, half/2)
	must(t, <-reloaded)
	sendA(half/2, half)
	if r.d.Addr("b") == nil || r.d.Addr("a").String() != aAddr.String() {
		t.Fatalf("after adding b: a at %v, b at %v", r.d.Addr("a"), r.d.Addr("b"))
	}
	// The second removes a: its sender has sent everything and waits for
	// the close.
	must(t, os.WriteFile(path, []byte(inputsConfig(out, b, c)), 0o644))
	closed := make(chan error, 1)
	go func() {
		_, err := io.Copy(io.Discard, conn)
		closed <- err
	}()
	must(t, r.d.Reload(load))
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("the connection to a ended with %v, want a close", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the connection to a was not closed by its removal")
	}
	conn.Close()
	if r.d.Addr("a") != nil {
		t.Fatalf("a still listed at %v", r.d.Addr("a"))
	}
	if c, err := net.DialTimeout("tcp", aAddr.String(), time.Second); err == nil {
		c.Close()
		t.Fatalf("a's port %s still accepts", aAddr)
	}
	// The sender goes on at b.
	conn, err = net.Dial("tcp", r.d.Addr("b").String())
	must(t, err)
	w = bufio.NewWriter(conn)
	sendA(half, 2*half)
	must(t, conn.Close())
	nc := cSender.end(t)
	waitLines(t, out, 2*half+nc, 2*time.Minute)
	if v := metric(t, r.d, `enrichd_listener_connections_total{listener="input:c",tls="false"}`); v != 1 {
		t.Errorf("c's listener accepted %v connections, want 1 (the sender's, kept across the reloads)", v)
	}
	if v := metric(t, r.d, `enrichd_config_reload_inputs_total{action="started"}`); v != 1 {
		t.Errorf("inputs started counted %v, want 1", v)
	}
	if v := metric(t, r.d, `enrichd_config_reload_inputs_total{action="stopped"}`); v != 1 {
		t.Errorf("inputs stopped counted %v, want 1", v)
	}
	if v := metric(t, r.d, `enrichd_events_in_total{input="c",type="tcp"}`); v != float64(nc) {
		t.Errorf("c's events in %v, want %d", v, nc)
	}
	checkDeliveredCount(t, r.d, len(readLines(t, out)))
	r.stop(t)
	counts := countSources(t, out)
	exactlyOnce(t, counts, "a", 2*half)
	exactlyOnce(t, counts, "c", nc)
	t.Logf("a: %d events (half to a, half to b after a's removal), c: %d over one connection", 2*half, nc)
	for _, want := range []string{"inputs_started=1 inputs_stopped=0", "inputs_started=0 inputs_stopped=1"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("no reload logged with %s:\n%s", want, logs.String())
		}
	}
}

// TestReloadInputBindRefused: a reload that adds an input on a port taken
// is refused, with the other input it adds not left bound: the running
// input and its open connection go on, the events before and after all
// arrive.
func TestReloadInputBindRefused(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out.json")
	keep := `{name: tcp, type: tcp, listen: "127.0.0.1:0"}`
	r, path, logs := startOutputs(t, dir, inputsConfig(out, keep))
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	defer taken.Close()
	free := freeAddr(t)
	c := dialTCP(t, r.d, "tcp")
	defer c.Close()
	send(t, c, []byte("<134>1 2026-11-30T05:24:00.000Z h app 1 m - seq=0 src=tcp\n"))
	waitLines(t, out, 1, time.Minute)
	must(t, os.WriteFile(path, []byte(inputsConfig(out, keep,
		fmt.Sprintf(`{name: other, type: tcp, listen: %q}`, free),
		fmt.Sprintf(`{name: taken, type: tcp, listen: %q}`, taken.Addr()))), 0o644))
	err = r.d.Reload(func() (*Config, error) { return LoadConfig(path) })
	var re *ReloadError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "input taken:") || !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("reload: %v, want the bind of input taken refused", err)
	}
	if !strings.Contains(logs.String(), "configuration reload refused") {
		t.Errorf("the refusal is not logged:\n%s", logs.String())
	}
	if r.d.Addr("other") != nil || r.d.Addr("taken") != nil {
		t.Errorf("inputs of the refused reload are listed")
	}
	if oc, err := net.DialTimeout("tcp", free, time.Second); err == nil {
		oc.Close()
		t.Errorf("input other of the refused reload still listens on %s", free)
	}
	send(t, c, []byte("<134>1 2026-11-30T05:24:00.000Z h app 1 m - seq=1 src=tcp\n"))
	c2 := dialTCP(t, r.d, "tcp")
	send(t, c2, []byte("<134>1 2026-11-30T05:24:00.000Z h app 1 m - seq=2 src=tcp\n"))
	c2.Close()
	waitLines(t, out, 3, time.Minute)
	if v := metric(t, r.d, `enrichd_config_reloads_total{result="failure"}`); v != 1 {
		t.Errorf("failures counted %v, want 1", v)
	}
	r.stop(t)
	exactlyOnce(t, countSources(t, out), "tcp", 3)
}

// TestReloadInputSameAddress: an input changed on its own fixed port (its
// format, syslog to JSON) is stopped and drained first, then the new one
// bound there: the event sent before arrives as syslog, one sent on a new
// connection after as JSON. A reload that changes it back but fails on an
// output afterwards is refused, and the input (the JSON one) is started
// again on the port.
func TestReloadInputSameAddress(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out.json")
	addr := freeAddr(t)
	syslogIn := fmt.Sprintf(`{name: in, type: tcp, listen: %q}`, addr)
	jsonIn := fmt.Sprintf(`{name: in, type: tcp, listen: %q, format: json}`, addr)
	r, path, _ := startOutputs(t, dir, inputsConfig(out, syslogIn))
	load := func() (*Config, error) { return LoadConfig(path) }
	c, err := net.Dial("tcp", addr)
	must(t, err)
	send(t, c, []byte("<134>1 2026-11-30T05:24:00.000Z h app 1 m - seq=0 src=in\n"))
	// Once the connection is accepted (a connection the listener has not
	// accepted yet when it closes is reset, as at shutdown).
	waitLines(t, out, 1, time.Minute)
	must(t, os.WriteFile(path, []byte(inputsConfig(out, jsonIn)), 0o644))
	must(t, r.d.Reload(load))
	must(t, c.SetReadDeadline(time.Now().Add(time.Minute)))
	if _, err := c.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("the connection to the old input: %v, want it closed", err)
	}
	c.Close()
	sendJSON := func(seq int) {
		t.Helper()
		c, err := net.Dial("tcp", addr)
		must(t, err)
		send(t, c, []byte(`{"message":"seq=`+strconv.Itoa(seq)+` src=in","json":true}`+"\n"))
		must(t, c.Close())
	}
	sendJSON(1)
	lines := waitLines(t, out, 2, time.Minute)
	m0, m1 := decode(t, lines[0]), decode(t, lines[1])
	if get(m0, "log.syslog.appname") != "app" || m1["json"] != true {
		t.Fatalf("before the reload, after:\n%s\n%s", lines[0], lines[1])
	}
	bad := strings.Replace(inputsConfig(out, syslogIn), "out.json", "missing/out.json", 1)
	must(t, os.WriteFile(path, []byte(bad), 0o644))
	if err := r.d.Reload(load); err == nil || !strings.Contains(err.Error(), "no such file or directory") {
		t.Fatalf("reload with an output that cannot open: %v", err)
	}
	sendJSON(2)
	lines = waitLines(t, out, 3, time.Minute)
	if m := decode(t, lines[2]); m["json"] != true {
		t.Fatalf("after the refused reload, the JSON input does not run: %s", lines[2])
	}
	r.stop(t)
	exactlyOnce(t, countSources(t, out), "in", 3)
}

// freeAddr returns a 127.0.0.1 address with a port free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	addr := ln.Addr().String()
	must(t, ln.Close())
	return addr
}

// TestReloadFileInputRefused: a file input is read to its end once, so a
// reload that adds, removes or changes one is refused, naming it, and
// the running inputs go on.
func TestReloadFileInputRefused(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out.json")
	in := filepath.Join(dir, "in.log")
	must(t, os.WriteFile(in, []byte("seq=0 src=file\n"), 0o644))
	tcp := `{name: tcp, type: tcp, listen: "127.0.0.1:0"}`
	file := fmt.Sprintf(`{name: f, type: file, path: %q}`, in)
	r, path, _ := startOutputs(t, dir, inputsConfig(out, tcp, file))
	load := func() (*Config, error) { return LoadConfig(path) }
	waitLines(t, out, 1, time.Minute)
	for _, tc := range []struct{ name, yml, want string }{
		{"removed", inputsConfig(out, tcp), "input f (file) removed or changed: a file input is read to its end once"},
		{"added", inputsConfig(out, tcp, file, fmt.Sprintf(`{name: g, type: file, path: %q}`, in)), "input g (file) added: a file input is read to its end once"},
	} {
		must(t, os.WriteFile(path, []byte(tc.yml), 0o644))
		if err := r.d.Reload(load); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("%s: reload: %v, want %s", tc.name, err, tc.want)
		}
	}
	c := dialTCP(t, r.d, "tcp")
	send(t, c, []byte("<134>1 2026-11-30T05:24:00.000Z h app 1 m - seq=0 src=tcp\n"))
	c.Close()
	waitLines(t, out, 2, time.Minute)
	r.stop(t)
	counts := countSources(t, out)
	exactlyOnce(t, counts, "file", 1)
	exactlyOnce(t, counts, "tcp", 1)
}

// TestReloadInputMoved: an input changed to another address (same name)
// is bound there first, then the old one drained and closed: the event
// sent on the old connection before the reload arrives, the old address
// stops accepting, the new one takes events, and the input's counters go
// on under its name.
func TestReloadInputMoved(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out.json")
	r, path, logs := startOutputs(t, dir, inputsConfig(out, `{name: in, type: tcp, listen: "127.0.0.1:0"}`))
	oldAddr := r.d.Addr("in").String()
	c, err := net.Dial("tcp", oldAddr)
	must(t, err)
	defer c.Close()
	send(t, c, []byte("<134>1 2026-11-30T05:24:00.000Z h app 1 m - seq=0 src=in\n"))
	waitLines(t, out, 1, time.Minute)
	newAddr := freeAddr(t)
	must(t, os.WriteFile(path, []byte(inputsConfig(out, fmt.Sprintf(`{name: in, type: tcp, listen: %q}`, newAddr))), 0o644))
	must(t, r.d.Reload(func() (*Config, error) { return LoadConfig(path) }))
	must(t, c.SetReadDeadline(time.Now().Add(time.Minute)))
	if _, err := c.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("the connection to the old address: %v, want it closed", err)
	}
	if oc, err := net.DialTimeout("tcp", oldAddr, time.Second); err == nil {
		oc.Close()
		t.Fatalf("the old address %s still accepts", oldAddr)
	}
	if got := r.d.Addr("in").String(); got != newAddr {
		t.Fatalf("input in at %s, want %s", got, newAddr)
	}
	c2, err := net.Dial("tcp", newAddr)
	must(t, err)
	send(t, c2, []byte("<134>1 2026-11-30T05:24:00.000Z h app 1 m - seq=1 src=in\n"))
	must(t, c2.Close())
	waitLines(t, out, 2, time.Minute)
	if v := waitMetric(t, r.d, `enrichd_events_in_total{input="in",type="tcp"}`, 2); v != 2 {
		t.Errorf("events in under the name %v, want 2 (the old input's carried over)", v)
	}
	r.stop(t)
	exactlyOnce(t, countSources(t, out), "in", 2)
	if !strings.Contains(logs.String(), "inputs_started=1 inputs_stopped=1") {
		t.Errorf("the reload is not logged with one input started and one stopped:\n%s", logs.String())
	}
}
