package enrichd

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/lutkit/lutkit/enrichd/internal/listen"
	"github.com/lutkit/lutkit/enrichd/internal/relp"
)

// relpInSession is one RELP connection. Its reader takes the client's
// frames in order (each transaction number the one after the last, from
// 1), adds the syslog commands' messages to batches, and attaches to each
// batch an acknowledgement (relpInBatch) that covers the run of transaction
// numbers in it. Batches are delivered in any order (several workers); the
// session answers them in transaction order: once the oldest batches are
// delivered, the "rsp 200 OK" of each of their commands is appended to
// the pending answers, and the writer sends all pending answers in one
// write. A "close" is answered after every command before it, then the
// session sends the serverclose hint and ends.
//
// A client whose session ends before its commands are answered (a
// broken connection, enrichd stopped or killed) sends the unanswered ones
// again on its next session (omrelp's window, 128 by default): they may
// arrive twice, never not at all.
type relpInSession struct {
	in *relpInput
	c  net.Conn
	bt *Batcher

	mu      sync.Mutex
	q       []*relpInBatch // batches and the close, oldest first, not answered yet
	free    []*relpInBatch
	out     []byte // answers to write
	spare   []byte
	acked   uint64 // syslog answers in out
	closing bool   // the writer writes out, then the hint, and closes
	dead    bool   // the connection is closed: nothing more is written
	kick    chan struct{}
	stopped chan struct{} // closed when the writer is to end
	stopMu  sync.Once
}

// relpInBatch is the acknowledgement of one batch of a session's syslog
// commands, transaction numbers first to first+n-1 (or, with close set,
// the session's close command, first its number).
type relpInBatch struct {
	Ack
	s     *relpInSession
	first uint32
	n     int
	close bool
	done  bool // under s.mu
}

func newRELPInSession(in *relpInput, c net.Conn) *relpInSession {
	s := &relpInSession{in: in, c: c, kick: make(chan struct{}, 1), stopped: make(chan struct{})}
	s.bt = in.env.Batcher(in.stats, in.cfg.Format, false)
	return s
}

// Delivered is called once every output has delivered the batch (or the
// queue holds it).
func (b *relpInBatch) Delivered() { b.s.complete(b) }

// Failed is called when an output gave up on the batch: the session ends
// without answering it, and the client sends it again.
func (b *relpInBatch) Failed(err error) {
	b.s.in.env.Log.Warn("relp: an output gave up on a batch; the session is closed so that the client sends it again",
		"remote", b.s.c.RemoteAddr().String(), "err", err)
	b.s.kill()
}

// open starts the acknowledgement of a new batch whose first command is
// txnr.
func (s *relpInSession) open(txnr uint32) *relpInBatch {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b *relpInBatch
	if n := len(s.free); n > 0 {
		b, s.free = s.free[n-1], s.free[:n-1]
	} else {
		b = &relpInBatch{s: s}
	}
	b.first, b.n, b.close, b.done = txnr, 0, false, false
	b.Init(b)
	s.q = append(s.q, b)
	return b
}

// complete marks b delivered and appends the answers of the delivered
// batches at the head of the queue.
func (s *relpInSession) complete(b *relpInBatch) {
	s.mu.Lock()
	b.done = true
	if s.dead {
		s.mu.Unlock()
		return
	}
	i := 0
	for ; i < len(s.q) && s.q[i].done; i++ {
		h := s.q[i]
		if h.close {
			s.out = relp.AppendFrame(s.out, h.first, relp.CmdRsp, nil)
			s.closing = true
			i++
			break
		}
		txnr := h.first
		for range h.n {
			s.out = appendOK(s.out, txnr)
			txnr = relp.NextTxnr(txnr)
		}
		s.acked += uint64(h.n)
		s.free = append(s.free, h)
	}
	if i == 0 {
		s.mu.Unlock()
		return
	}
	clear(s.q[:i])
	s.q = s.q[i:]
	s.mu.Unlock()
	s.wake()
}

// rspOK is the data of an acknowledgement.
var rspOK = []byte("200 OK")

func appendOK(dst []byte, txnr uint32) []byte {
	return relp.AppendFrame(dst, txnr, relp.CmdRsp, rspOK)
}

// waiting reports whether commands read wait for their answers.
func (s *relpInSession) waiting() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.q) > 0 || len(s.out) > 0
}

func (s *relpInSession) wake() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// answer appends an answer that needs no delivery (the open).
func (s *relpInSession) answer(txnr uint32, data []byte) {
	s.mu.Lock()
	s.out = relp.AppendFrame(s.out, txnr, relp.CmdRsp, data)
	s.mu.Unlock()
	s.wake()
}

// finish makes the writer write what is pending and the serverclose
// hint, then close the connection (the input's Close).
func (s *relpInSession) finish() {
	s.stopMu.Do(func() { close(s.stopped) })
}

// kill closes the connection at once: nothing pending is answered.
func (s *relpInSession) kill() {
	s.mu.Lock()
	s.dead = true
	s.mu.Unlock()
	s.c.Close()
	s.finish()
}

// writeLoop writes the pending answers, all that are pending in one
// write, until the session closes.
func (s *relpInSession) writeLoop() {
	defer s.in.writers.Done()
	defer s.in.forget(s)
	for {
		final := false
		select {
		case <-s.kick:
		case <-s.stopped:
			final = true
		}
		s.mu.Lock()
		if s.dead {
			s.mu.Unlock()
			return
		}
		buf, acked, closing := s.out, s.acked, s.closing
		s.out, s.acked = s.spare[:0], 0
		s.mu.Unlock()
		if final || closing {
			buf = relp.AppendFrame(buf, 0, relp.CmdServerClose, nil)
		}
		if len(buf) > 0 {
			_ = s.c.SetWriteDeadline(time.Now().Add(relpInWriteTimeout))
			if _, err := s.c.Write(buf); err != nil {
				s.in.env.Log.Debug("relp: writing answers failed; the session is closed", "remote", s.c.RemoteAddr().String(), "err", err)
				s.kill()
				return
			}
			s.in.acked.Add(acked)
		}
		s.mu.Lock()
		s.spare = buf
		s.mu.Unlock()
		if final || closing {
			s.kill()
			return
		}
	}
}

// errRELPProtocol is a session that breaks the protocol; errRELPRefused
// an open refused with an answer.
var (
	errRELPProtocol = errors.New("relp protocol error")
	errRELPRefused  = errors.New("relp open refused")
)

// readLoop reads the client's frames until the session ends.
func (s *relpInSession) readLoop() {
	in := s.in
	defer in.readers.Done()
	if id, _ := listen.Identity(s.c); id != "" {
		s.bt.SetClient([]byte(id))
	}
	err := s.read(relp.NewReader(&connReader{c: s.c, bt: s.bt, stop: &in.stopState, atOnce: true,
		idleTimeout: in.set.Limits.IdleTimeout, idle: &in.connsIdle, busy: s.waiting}, in.relpFrameLimit()))
	s.bt.Flush()
	var fe *relp.FrameError
	switch {
	case err == nil: // a close command: the writer ends the session
		return
	case errors.As(err, &fe), errors.Is(err, errRELPProtocol), errors.Is(err, errRELPRefused):
		in.refusedOp.Add(1)
		in.stats.FrameErrors.Add(1)
		if in.warnAllowed() {
			in.env.Log.Warn("relp: protocol error; the session is closed", "remote", s.c.RemoteAddr().String(), "err", err)
		}
		// The writer sends the answers ready (a refusal among them)
		// and the hint, then closes.
		s.finishAfterWrite()
		return
	case in.isStopping():
		// Stopped (perhaps inside a frame): what was taken is answered
		// until Close.
		return
	case errors.Is(err, io.ErrUnexpectedEOF):
		in.stats.FrameErrors.Add(1)
		in.env.Log.Debug("relp: the connection ended inside a frame", "remote", s.c.RemoteAddr().String())
	case isTimeout(err), errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed):
	default:
		in.stats.FrameErrors.Add(1)
		in.env.Log.Debug("relp: connection ended with an error", "remote", s.c.RemoteAddr().String(), "err", err)
	}
	s.kill()
}

// read runs the session's protocol: nil after a close command.
func (s *relpInSession) read(r *relp.Reader) error {
	in := s.in
	want := uint32(1)
	opened := false
	var cur *relpInBatch
	for {
		if r.Buffered() == 0 {
			// Nothing more to take without waiting: the batch goes to
			// the workers, so that a client waiting for its window's
			// answers gets them.
			s.bt.Flush()
		}
		f, err := r.Next()
		if err != nil {
			return err
		}
		if f.Txnr != want {
			return fmt.Errorf("%w: transaction number %d, want %d", errRELPProtocol, f.Txnr, want)
		}
		want = relp.NextTxnr(want)
		switch f.Cmd {
		case relp.CmdOpen:
			if opened {
				return fmt.Errorf("%w: open in an open session", errRELPProtocol)
			}
			if err := checkOffers(f.Data); err != nil {
				s.answer(f.Txnr, relp.AppendRsp(nil, 500, err.Error(), nil))
				return fmt.Errorf("%w: %w", errRELPRefused, err)
			}
			opened = true
			in.opened.Add(1)
			s.answer(f.Txnr, relpOffers)
		case relp.CmdSyslog:
			if !opened {
				return fmt.Errorf("%w: syslog before open", errRELPProtocol)
			}
			msg, trunc := trimRecordLine(f.Data, in.cfg.MaxMessageSize)
			if !s.bt.Pending() {
				s.bt.Take()
			}
			if s.bt.Ack() == nil {
				cur = s.open(f.Txnr)
				s.bt.SetAck(&cur.Ack)
			}
			cur.n++
			s.bt.Put(msg, trunc)
		case relp.CmdClose:
			if !opened {
				return fmt.Errorf("%w: close before open", errRELPProtocol)
			}
			s.bt.Flush()
			b := s.open(f.Txnr)
			b.close = true
			b.Delivered()
			return nil
		default:
			return fmt.Errorf("%w: command %q from a client", errRELPProtocol, f.Cmd)
		}
	}
}

// finishAfterWrite makes the writer send the answers ready, and the
// serverclose hint, then close the session.
func (s *relpInSession) finishAfterWrite() {
	s.mu.Lock()
	s.closing = true
	s.mu.Unlock()
	s.wake()
}

// relpOffers is the answer to an open: librelp's, with enrichd's name.
var relpOffers = relp.AppendRsp(nil, 200, "OK", relp.AppendOffers(nil,
	relp.Offer{Name: "relp_version", Value: "0"},
	relp.Offer{Name: "relp_software", Value: "lutkit-enrichd"},
	relp.Offer{Name: "commands", Value: "syslog"}))

// checkOffers checks a client's offers: RELP version 0 and the syslog
// command.
func checkOffers(data []byte) error {
	offers, err := relp.ParseOffers(data)
	if err != nil {
		return err
	}
	v, ok := relp.Lookup(offers, "relp_version")
	if !ok || v == "" || strings.Trim(v, "0123456789") != "" {
		return fmt.Errorf("error: no relp_version offered")
	}
	cmds, _ := relp.Lookup(offers, "commands")
	for c := range strings.SplitSeq(cmds, ",") {
		if c == relp.CmdSyslog {
			return nil
		}
	}
	return errors.New("required command not supported by client")
}

// trimRecordLine is a syslog command's message: without a line end, cut
// to maxSize (trunc says so).
func trimRecordLine(msg []byte, maxSize int) (_ []byte, trunc bool) {
	for len(msg) > 0 && (msg[len(msg)-1] == '\n' || msg[len(msg)-1] == '\r') {
		msg = msg[:len(msg)-1]
	}
	if len(msg) > maxSize {
		return msg[:maxSize], true
	}
	return msg, false
}
