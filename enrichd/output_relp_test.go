package enrichd

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lutkit/lutkit/enrichd/engine"
	"github.com/lutkit/lutkit/enrichd/internal/relp"
)

func TestRELPOutputConfig(t *testing.T) {
	in := "inputs: [{type: file, path: x}]\noutputs:\n"
	cfg, err := ParseConfig("e.yaml", []byte(in+"  - {type: relp, address: \"127.0.0.1:2514\"}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if set := cfg.Outputs[0].Settings.(*RELPOutputConfig); set.Window != DefaultRELPWindow || set.Timeout != DefaultRELPTimeout || set.TLS != nil {
		t.Fatalf("defaults: %+v", set)
	}
	cfg, err = ParseConfig("/etc/enrichd/e.yaml", []byte(in+"  - {type: relp, address: \"h:2514\", window: 16, timeout: 5s, tls: {ca_file: ca.pem, cert_file: c.pem, key_file: c.key, server_name: relp.example}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	set := cfg.Outputs[0].Settings.(*RELPOutputConfig)
	if set.Window != 16 || set.Timeout != 5*time.Second || set.TLS == nil || set.TLS.CAFile != "/etc/enrichd/ca.pem" ||
		set.TLS.CertFile != "/etc/enrichd/c.pem" || set.TLS.KeyFile != "/etc/enrichd/c.key" || set.TLS.ServerName != "relp.example" {
		t.Fatalf("settings: %+v %+v", set, set.TLS)
	}
	for _, tc := range []struct{ yml, want string }{
		{"  - {type: relp}\n", `e.yaml:3:5: outputs[0].address: required for a relp output (HOST:PORT)`},
		{"  - {type: relp, address: \"h:1\", window: -1}\n", `e.yaml:3:42: outputs[0].window: must be between 1 and 1048576, not -1`},
		{"  - {type: relp, address: \"h:1\", tls: {cert_file: c.pem}}\n", `e.yaml:3:39: outputs[0].tls: cert_file and key_file go together`},
		{"  - {type: relp, address: \"h:1\", tls: {ca: x}}\n", `e.yaml:3:40: outputs[0].tls.ca: unknown field (known: ca_file, cert_file, key_file, server_name)`},
		{"  - {type: tcp, address: \"h:1\", window: 4}\n", `e.yaml:3:41: outputs[0].window: only for a relp output`},
	} {
		if errs := configErrors(t, in+tc.yml); len(errs) != 1 || errs[0] != tc.want {
			t.Errorf("%s\n got %q\nwant %q", tc.yml, errs, tc.want)
		}
	}
	// A tls: block whose files cannot be read stops the start.
	cfg, err = ParseConfig("e.yaml", []byte(in+"  - {type: relp, address: \"127.0.0.1:1\", tls: {ca_file: /nonexistent/ca.pem}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(cfg, slog.New(slog.DiscardHandler)); err == nil || !strings.Contains(err.Error(), "tls.ca_file") {
		t.Fatalf("New with a missing CA file: %v", err)
	}
}

// relpScript is a RELP server over 127.0.0.1 built on the frame codec,
// for what imrelp cannot be made to do: it answers some of a session's
// events out of order (a pair's second before its first) and refuses
// the event whose data holds refuse with 500, in the first session only.
// It records the events of each session in the order received.
type relpScript struct {
	ln       net.Listener
	refuse   string
	mu       sync.Mutex
	sessions [][]string
	closed   atomic.Int32 // sessions ended by a close command
}

func newRELPScript(t *testing.T, refuse string) *relpScript {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &relpScript{ln: ln, refuse: refuse}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.sessions = append(s.sessions, nil)
			n := len(s.sessions) - 1
			s.mu.Unlock()
			go s.serve(c, n)
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return s
}

func (s *relpScript) serve(c net.Conn, n int) {
	defer c.Close()
	r := relp.NewReader(c, 128<<10)
	answer := func(txnr uint32, data string) bool {
		_, err := c.Write(relp.AppendFrame(nil, txnr, relp.CmdRsp, []byte(data)))
		return err == nil
	}
	held := uint32(0)
	for {
		f, err := r.Next()
		if err != nil {
			return
		}
		switch f.Cmd {
		case relp.CmdOpen:
			answer(f.Txnr, "200 OK\nrelp_version=0\nrelp_software=script\ncommands=syslog")
		case relp.CmdClose:
			s.closed.Add(1)
			answer(f.Txnr, "")
			_, _ = c.Write(relp.AppendFrame(nil, 0, relp.CmdServerClose, nil))
			return
		case relp.CmdSyslog:
			s.mu.Lock()
			s.sessions[n] = append(s.sessions[n], string(f.Data))
			s.mu.Unlock()
			switch {
			case n > 0:
				answer(f.Txnr, "200 OK")
			case strings.Contains(string(f.Data), s.refuse):
				answer(f.Txnr, "500 refused by the script")
			case held == 0:
				held = f.Txnr
			default:
				answer(f.Txnr, "200 OK")
				answer(held, "200 OK")
				held = 0
			}
		}
	}
}

func (s *relpScript) received() [][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([][]string, len(s.sessions))
	for i, ss := range s.sessions {
		out[i] = append([]string(nil), ss...)
	}
	return out
}

// relpTestBuffer is a buffer of the lines seq=from .. seq=to-1, tracked
// for one output: its delivery counts in out.
func relpTestBuffer(from, to int, out *atomic.Uint64) *Buffer {
	b := &Buffer{Lines: engine.Lines{}, Events: to - from, pool: make(chan *Buffer, 1)}
	for i := from; i < to; i++ {
		b.B = fmt.Appendf(b.B, `{"message":"seq=%d"}`+"\n", i)
	}
	b.t = track(1, b.Events, nil, nil, out)
	return b
}

// TestRELPOutputAnswers: answers out of order are taken; an answer of
// 500 breaks the session, and the next one sends again, in order, every
// event not acknowledged (the refused one and those after it); a buffer
// is delivered only once all its events are answered 200; Close sends
// close and takes its answer.
func TestRELPOutputAnswers(t *testing.T) {
	srv := newRELPScript(t, `"seq=10"`)
	set := &RELPOutputConfig{Window: 8}
	set.SetDefaults()
	stop := make(chan struct{})
	env := &Env{Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Stop: stop, name: "relp", typ: "relp"}
	out, err := newRELPOutput(&OutputConfig{Name: "relp", Type: "relp", Address: srv.ln.Addr().String(), Settings: set}, env)
	if err != nil {
		t.Fatal(err)
	}
	o := out.(*relpOutput)
	var first, second atomic.Uint64
	err = o.Write(relpTestBuffer(0, 10, &first))
	if err == nil {
		err = o.Write(relpTestBuffer(10, 20, &second))
	}
	if err == nil {
		err = o.Flush()
	}
	if err == nil || !strings.Contains(err.Error(), "500 refused by the script") {
		t.Fatalf("the first session: %v, want the 500 answer", err)
	}
	if first.Load() != 10 || second.Load() != 0 {
		t.Fatalf("after the 500: delivered %d and %d events, want 10 and 0", first.Load(), second.Load())
	}
	for range 10 {
		if err = o.Flush(); err == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	if first.Load() != 10 || second.Load() != 10 {
		t.Fatalf("delivered %d and %d events, want 10 and 10", first.Load(), second.Load())
	}
	got := srv.received()
	if len(got) != 2 {
		t.Fatalf("%d sessions, want 2", len(got))
	}
	for i, ev := range got[0][:10] {
		if ev != fmt.Sprintf(`{"message":"seq=%d"}`, i) {
			t.Fatalf("session 1, event %d: %q", i, ev)
		}
	}
	if len(got[1]) != 10 {
		t.Fatalf("session 2 got %d events, want the 10 not acknowledged: %q", len(got[1]), got[1])
	}
	for i, ev := range got[1] {
		if ev != fmt.Sprintf(`{"message":"seq=%d"}`, 10+i) {
			t.Fatalf("session 2, event %d: %q", i, ev)
		}
	}
	// resent counts what was unanswered at the break (at most the
	// window); the server read some of it before it closed: those are
	// the duplicates, which resent bounds.
	if s, b, r := o.sessions.Load(), o.breaks.Load(), o.resent.Load(); s != 2 || b != 1 || r < uint64(len(got[0])-10) || r > uint64(set.Window) {
		t.Fatalf("%d sessions, %d breaks, %d resent; want 2, 1, %d to %d", s, b, r, len(got[0])-10, set.Window)
	}
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	if srv.closed.Load() != 1 {
		t.Fatal("the session was not closed with a close command")
	}
	if o.Stats().Delivered.Load() != 20 {
		t.Fatalf("output stats: %d delivered", o.Stats().Delivered.Load())
	}
}

// TestRELPOutputServerSilent: a server that opens the session but never
// answers an event breaks it after timeout; nothing is delivered.
func TestRELPOutputServerSilent(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		r := relp.NewReader(c, 128<<10)
		for {
			f, err := r.Next()
			if err != nil {
				return
			}
			if f.Cmd == relp.CmdOpen {
				_, _ = c.Write(relp.AppendFrame(nil, f.Txnr, relp.CmdRsp, []byte("200 OK\nrelp_version=0\ncommands=syslog")))
			}
		}
	}()
	set := &RELPOutputConfig{Timeout: 300 * time.Millisecond}
	set.SetDefaults()
	env := &Env{Log: slog.New(slog.DiscardHandler), Stop: make(chan struct{}), name: "relp", typ: "relp"}
	out, err := newRELPOutput(&OutputConfig{Name: "relp", Type: "relp", Address: ln.Addr().String(), Settings: set}, env)
	if err != nil {
		t.Fatal(err)
	}
	var delivered atomic.Uint64
	if err := out.Write(relpTestBuffer(0, 5, &delivered)); err != nil {
		t.Fatal(err)
	}
	err = out.Flush()
	if err == nil || errorReasons[errorReason(err)] != "timeout" {
		t.Fatalf("Flush: %v (reason %s), want a timeout", err, errorReasons[errorReason(err)])
	}
	if delivered.Load() != 0 || out.Stats().Delivered.Load() != 0 {
		t.Fatalf("%d delivered", delivered.Load())
	}
}
