package enrichd

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lutkit/lutkit/enrichd/internal/relp"
)

// relpModel is what a session of the relp input must make of a client's
// bytes: the syslog commands it takes before the session ends, whether it
// ends for a protocol error, and whether the bytes end with a close (the
// last frame), which is answered after every command.
type relpModel struct {
	events    int
	syslogs   []uint32 // their transaction numbers
	protoErr  bool
	closed    bool // a close command ends the session
	closeLast bool // and nothing follows it
	closeTxnr uint32
}

func modelRELP(data []byte, limit int) relpModel {
	var m relpModel
	r := relp.NewReader(bytes.NewReader(data), limit)
	want, opened := uint32(1), false
	for {
		f, err := r.Next()
		if err != nil {
			var fe *relp.FrameError
			m.protoErr = errors.As(err, &fe)
			return m
		}
		if f.Txnr != want {
			m.protoErr = true
			return m
		}
		want = relp.NextTxnr(want)
		switch {
		case f.Cmd == relp.CmdOpen && !opened:
			if checkOffers(f.Data) != nil {
				m.protoErr = true
				return m
			}
			opened = true
		case f.Cmd == relp.CmdSyslog && opened:
			m.events++
			m.syslogs = append(m.syslogs, f.Txnr)
		case f.Cmd == relp.CmdClose && opened:
			m.closed, m.closeTxnr = true, f.Txnr
			_, err := r.Next()
			m.closeLast = errors.Is(err, io.EOF)
			return m
		default:
			m.protoErr = true
			return m
		}
	}
}

// relpFuzzSession runs one session of in over an in-memory connection:
// it writes data from the client's side, reads every answer, and returns
// them once the server has closed its side (or, for bytes that do not end
// the session, once the client closed after writing them all).
func relpFuzzSession(t *testing.T, in *relpInput, data []byte, endsItself bool) []byte {
	cli, srv := net.Pipe()
	in.mu.Lock()
	s := newRELPInSession(in, srv)
	in.sessions[s] = struct{}{}
	in.readers.Add(1)
	in.writers.Add(1)
	in.mu.Unlock()
	go s.writeLoop()
	go s.readLoop()
	answers := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(cli)
		answers <- b
	}()
	_ = cli.SetWriteDeadline(time.Now().Add(30 * time.Second))
	_, werr := cli.Write(data)
	if !endsItself {
		// The server waits for more: the client hangs up.
		cli.Close()
	}
	var b []byte
	select {
	case b = <-answers:
		cli.Close()
	case <-time.After(30 * time.Second):
		t.Fatalf("the session did not end (write: %v)", werr)
	}
	// Gone from the input once its reader and writer are done.
	for end := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Microsecond) {
		in.mu.Lock()
		_, open := in.sessions[s]
		in.mu.Unlock()
		if !open {
			return b
		}
		if time.Now().After(end) {
			t.Fatal("the session is still open 30 s after its connection closed")
		}
	}
}

// FuzzRELPSession feeds arbitrary bytes to the relp input's session, in
// a running daemon, as a client's: no panic; every session ends, closed
// by the server at a bad frame or command (counted as a protocol error);
// the syslog commands before the end are taken as events, as many as a
// model of the protocol says; and a session that ends with close gets an
// answer for every command, in transaction order, then the close's and
// the serverclose hint.
func FuzzRELPSession(f *testing.F) {
	open := "1 open 30 relp_version=0\ncommands=syslog\n"
	f.Add([]byte(open + "2 syslog 11 <13>1 hello\n3 close 0\n"))
	f.Add([]byte(open + "2 syslog 5 hello\n3 syslog 5 world\n4 syslog 0\n5 close 0\n"))
	f.Add([]byte(open + "3 syslog 5 hello\n"))
	f.Add([]byte(open + "2 syslog 5 hello\n"))
	f.Add([]byte("1 syslog 5 hello\n"))
	f.Add([]byte("1 open 15 relp_version=0\n2 close 0\n"))
	f.Add([]byte(open + "2 open 0\n"))
	f.Add([]byte(open + "2 rsp 6 200 OK\n"))
	f.Add([]byte(open + "2 syslog 100 short\n"))
	f.Add([]byte(open + "2 syslog 3 abcX"))
	f.Add([]byte(open + "2 syslog 18 <13>Dec  3 host x\n\n3 close 0\n4 syslog 1 a\n"))
	dir := f.TempDir()
	yml := fmt.Sprintf(`
inputs:
  - {name: relp, type: relp, listen: "127.0.0.1:0", max_message_size: 1024}
outputs: [{type: file, path: %q}]
pipeline: {workers: 2, batch_size: 4}
`, filepath.Join(dir, "out.json"))
	cfg, err := ParseConfig(filepath.Join(dir, "enrichd.yaml"), []byte(yml))
	if err != nil {
		f.Fatal(err)
	}
	r := startDaemon(f, cfg)
	in := r.d.inputs[0].(*relpInput)
	limit := in.relpFrameLimit()
	// The sessions below join the input's own: wait until it runs.
	for end := time.Now().Add(30 * time.Second); !r.d.Ready(); time.Sleep(time.Millisecond) {
		if time.Now().After(end) {
			f.Fatal("the daemon is not ready after 30 s")
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m := modelRELP(data, limit)
		n0, e0 := in.stats.Events.Load(), in.refusedOp.Load()
		out := relpFuzzSession(t, in, data, m.protoErr || m.closed)
		// A batch is counted as it is handed to the workers, which a
		// session's end can leave to the batcher's flush: wait for it.
		n := in.stats.Events.Load() - n0
		for end := time.Now().Add(10 * time.Second); n < uint64(m.events) && time.Now().Before(end); n = in.stats.Events.Load() - n0 {
			time.Sleep(100 * time.Microsecond)
		}
		if n != uint64(m.events) {
			t.Fatalf("%d events taken, the model says %d (%+v)", n, m.events, m)
		}
		var errs uint64
		if m.protoErr {
			errs = 1
		}
		if e := in.refusedOp.Load() - e0; e != errs {
			t.Fatalf("%d protocol errors counted, the model says %d", e, errs)
		}
		// The answers: in transaction order, each once.
		ar := relp.NewReader(bytes.NewReader(out), 1<<20)
		var txnrs []uint32
		hint := false
		for {
			a, err := ar.Next()
			if err != nil {
				if !errors.Is(err, io.EOF) {
					t.Fatalf("the answers %q: %v", out, err)
				}
				break
			}
			if hint {
				t.Fatalf("an answer after the serverclose hint: %q", out)
			}
			switch a.Cmd {
			case relp.CmdRsp:
				txnrs = append(txnrs, a.Txnr)
			case relp.CmdServerClose:
				hint = true
			default:
				t.Fatalf("the server sent %q: %q", a.Cmd, out)
			}
		}
		for i := 1; i < len(txnrs); i++ {
			if txnrs[i] != relp.NextTxnr(txnrs[i-1]) {
				t.Fatalf("answers out of order: %v", txnrs)
			}
		}
		if len(txnrs) > 0 && txnrs[0] != 1 {
			t.Fatalf("the first answer is to %d: %v", txnrs[0], txnrs)
		}
		if m.closed && m.closeLast {
			want := append([]uint32{1}, m.syslogs...)
			want = append(want, m.closeTxnr)
			if fmt.Sprint(txnrs) != fmt.Sprint(want) || !hint {
				t.Fatalf("answers %v (hint %v), want %v and the hint", txnrs, hint, want)
			}
		}
	})
}

// TestRELPSession runs sessions over TCP with a daemon of two workers
// and batches of 4: a session's answers come in transaction order, all
// of them before the close's answer and the serverclose hint; a
// transaction number out of order ends the session; a refused open is
// answered 500; protocol errors are all counted, logged one a second.
func TestRELPSession(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out.json")
	cfg, err := ParseConfig(filepath.Join(dir, "enrichd.yaml"), fmt.Appendf(nil, `
inputs:
  - {name: relp, type: relp, listen: "127.0.0.1:0"}
outputs: [{type: file, path: %q}]
pipeline: {workers: 2, batch_size: 4}
`, out))
	if err != nil {
		t.Fatal(err)
	}
	r, logs := startDaemonLogged(t, cfg)
	addr := r.d.Addr("relp").String()
	session := func(frames string) string {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := io.WriteString(c, frames); err != nil {
			t.Fatal(err)
		}
		_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
		b, err := io.ReadAll(bufio.NewReader(c))
		if err != nil {
			t.Fatalf("%v after %q", err, b)
		}
		return string(b)
	}
	var frames, want bytes.Buffer
	frames.Write(relp.AppendFrame(nil, 1, relp.CmdOpen, []byte("relp_version=0\nrelp_software=librelp,1.11.0,http://librelp.adiscon.com\ncommands=syslog")))
	want.WriteString("1 rsp 66 200 OK\nrelp_version=0\nrelp_software=lutkit-enrichd\ncommands=syslog\n")
	const n = 1000
	for i := range n {
		msg := fmt.Sprintf("<13>1 - h app - - - seq=%d", i)
		frames.Write(relp.AppendFrame(nil, uint32(i+2), relp.CmdSyslog, []byte(msg)))
		want.Write(relp.AppendFrame(nil, uint32(i+2), relp.CmdRsp, []byte("200 OK")))
	}
	fmt.Fprintf(&frames, "%d close 0\n", n+2)
	fmt.Fprintf(&want, "%d rsp 0\n0 serverclose 0\n", n+2)
	if got := session(frames.String()); got != want.String() {
		t.Fatalf("answers:\n%.400q\nwant:\n%.400q", got, want.String())
	}
	if lines := waitLines(t, out, n, 10*time.Second); len(lines) != n {
		t.Fatalf("%d lines out, want %d", len(lines), n)
	}
	in := r.d.inputs[0].(*relpInput)
	if in.acked.Load() != n || in.opened.Load() != 1 {
		t.Fatalf("%d acknowledged in %d sessions, want %d in 1", in.acked.Load(), in.opened.Load(), n)
	}

	// A transaction number skipped: the session ends there, what came
	// before it answered or not, nothing after it taken.
	got := session("1 open 30 relp_version=0\ncommands=syslog\n2 syslog 3 abc\n4 syslog 3 def\n")
	if !bytes.HasPrefix([]byte(got), []byte("1 rsp ")) || bytes.Contains([]byte(got), []byte("4 rsp")) {
		t.Fatalf("answers to a skipped transaction number: %q", got)
	}
	if got := in.refusedOp.Load(); got != 1 {
		t.Fatalf("%d protocol errors counted, want 1", got)
	}

	// An open without the syslog command: refused with 500.
	if got := session("1 open 15 relp_version=0\n\n"); got != "1 rsp 44 500 required command not supported by client\n0 serverclose 0\n" {
		t.Fatalf("answer to an open without commands: %q", got)
	}
	// Two protocol errors within a second: both counted, one logged.
	if n, logged := in.refusedOp.Load(), strings.Count(logs.String(), "relp: protocol error"); n != 2 || logged != 1 {
		t.Fatalf("%d protocol errors counted, %d logged; want 2 and 1", n, logged)
	}
}

// TestRELPLimits: a relp input's limits: block is the tcp input's. Over
// max_connections a session is refused and counted; a session silent
// for idle_timeout is closed and counted.
func TestRELPLimits(t *testing.T) {
	dir := t.TempDir()
	cfg, err := ParseConfig(filepath.Join(dir, "enrichd.yaml"), fmt.Appendf(nil, `
inputs:
  - {name: relp, type: relp, listen: "127.0.0.1:0", limits: {max_connections: 1, idle_timeout: 300ms}}
outputs: [{type: file, path: %q}]
`, filepath.Join(dir, "out.json")))
	if err != nil {
		t.Fatal(err)
	}
	r := startDaemon(t, cfg)
	addr := r.d.Addr("relp").String()
	in := r.d.inputs[0].(*relpInput)
	c1, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c1.Close()
	if _, err := io.WriteString(c1, "1 open 30 relp_version=0\ncommands=syslog\n2 syslog 5 hello\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c1)
	_ = c1.SetReadDeadline(time.Now().Add(10 * time.Second))
	for _, want := range []string{"1 rsp 66 200 OK\n", "relp_version=0\n", "relp_software=lutkit-enrichd\n", "commands=syslog\n", "2 rsp 6 200 OK\n"} {
		if l, err := br.ReadString('\n'); l != want {
			t.Fatalf("read %q (%v), want %q", l, err, want)
		}
	}
	c2, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	_ = c2.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := c2.Read(make([]byte, 1)); n != 0 || err == nil {
		t.Fatalf("a second session over max_connections: read %d, %v", n, err)
	}
	if got := in.ln.Stats().RefusedFor("max_connections"); got != 1 {
		t.Fatalf("%d refused for max_connections, want 1", got)
	}
	// c1 says nothing more: closed after idle_timeout (its only command
	// is answered, so it waits for nothing).
	start := time.Now()
	if n, err := br.Read(make([]byte, 1)); n != 0 || err == nil {
		t.Fatalf("an idle session: read %d, %v", n, err)
	}
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Fatalf("the idle session was closed after %s, before idle_timeout", d)
	}
	if got := in.connsIdle.Load(); got != 1 {
		t.Fatalf("%d sessions closed as idle, want 1", got)
	}
}

// TestRELPWaitingIsNotIdle: a session whose commands wait for their
// answers is not closed by idle_timeout; a command whose event the output
// cannot write (/dev/full) is not answered.
func TestRELPWaitingIsNotIdle(t *testing.T) {
	dir := t.TempDir()
	cfg, err := ParseConfig(filepath.Join(dir, "enrichd.yaml"), []byte(`
inputs:
  - {name: relp, type: relp, listen: "127.0.0.1:0", limits: {idle_timeout: 200ms}}
outputs: [{type: file, path: /dev/full}]
shutdown_timeout: 1s
`))
	if err != nil {
		t.Fatal(err)
	}
	d, err := New(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	ran := make(chan error, 1)
	go func() { ran <- d.Run(ctx) }()
	defer func() {
		// The output never wrote: the daemon gives up at shutdown_timeout.
		cancel()
		if err := <-ran; err == nil {
			t.Error("Run returned nil, although the file output never wrote")
		}
	}()
	in := d.inputs[0].(*relpInput)
	c, err := net.Dial("tcp", d.Addr("relp").String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "1 open 30 relp_version=0\ncommands=syslog\n2 syslog 5 hello\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	_ = c.SetReadDeadline(time.Now().Add(1500 * time.Millisecond))
	var got []byte
	for {
		b, err := br.ReadByte()
		if err != nil {
			if !isTimeout(err) {
				t.Fatalf("the waiting session ended: %v after %q", err, got)
			}
			break
		}
		got = append(got, b)
	}
	if string(got) != "1 rsp 66 200 OK\nrelp_version=0\nrelp_software=lutkit-enrichd\ncommands=syslog\n" {
		t.Fatalf("answers %q: the syslog command is answered though not written", got)
	}
	if n := in.connsIdle.Load(); n != 0 {
		t.Fatalf("%d sessions closed as idle", n)
	}
	// The client holds no answer to its syslog command: nothing counted
	// as acknowledged or delivered.
	if a, out := in.acked.Load(), d.eventsOut.Load(); a != 0 || out != 0 {
		t.Fatalf("%d commands counted acknowledged, %d events delivered; the client holds no answer", a, out)
	}
}
