package enrichd

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/lutkit/lutkit/enrichd/internal/relp"
	"github.com/lutkit/lutkit/internal/config"
	"github.com/lutkit/lutkit/internal/version"
)

func init() {
	RegisterOutput(OutputKind{Type: "relp", Endpoint: EndpointAddress,
		Settings: func() Settings { return &RELPOutputConfig{} }, New: newRELPOutput})
}

// Defaults of a relp output: the window of omrelp, and the time an
// answer may take (omrelp's timeout is 90 s).
const (
	DefaultRELPWindow  = 128
	DefaultRELPTimeout = 90 * time.Second
)

// relpMaxAnswer is the largest answer the output reads from a server
// (the answer to open holds the server's offers).
const relpMaxAnswer = 64 << 10

// RELPOutputConfig are the settings of a relp output: window, timeout and
// tls.
type RELPOutputConfig struct {
	// Window is how many events may be sent and not yet acknowledged:
	// also the most a receiver can get twice after a broken session.
	Window int
	// Timeout bounds the connection and the open, each write, and the
	// wait for an answer while the window is full or a flush waits.
	Timeout time.Duration
	// TLS to the RELP server (imrelp's tls="on"), with the client
	// certificate it may check (tls.authmode="certvalid" or "name"); nil:
	// plain TCP.
	TLS *ClientTLS
}

// Keys are the relp output's keys.
func (c *RELPOutputConfig) Keys(d *config.Decoder, field string) config.Keys {
	f := func(key string) string { return config.Field(field, key) }
	return config.Keys{
		"window":  func(v *yaml.Node) { c.Window, _ = d.Int(v, f("window")) },
		"timeout": func(v *yaml.Node) { c.Timeout, _ = d.Duration(v, f("timeout")) },
		"tls":     ClientTLSKey(d, f("tls"), &c.TLS, false),
	}
}

// SetDefaults fills the unset settings.
func (c *RELPOutputConfig) SetDefaults() {
	if c.Window == 0 {
		c.Window = DefaultRELPWindow
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultRELPTimeout
	}
}

// Validate checks the settings.
func (c *RELPOutputConfig) Validate(s config.Scope) {
	if c.Window < 1 || c.Window > 1<<20 {
		s.Errorf("window", "must be between 1 and 1048576, not %d", c.Window)
	}
	if c.Timeout < 0 {
		s.Errorf("timeout", "must be positive, not %s", c.Timeout)
	}
	c.TLS.Validate(s)
}

var (
	mRELPSessions = MetricDesc("output_relp_sessions_total", "RELP sessions a relp output opened (the server answered open with 200).", "output")
	mRELPBreaks   = MetricDesc("output_relp_session_breaks_total", "RELP sessions of a relp output that broke (a write or read failed, a timeout, an answer other than 200).", "output")
	mRELPResent   = MetricDesc("output_relp_events_resent_total", "Events a relp output sent again on a new session, unacknowledged on a broken one: the receiver may hold them twice (an upper bound of its duplicates).", "output")
	mRELPUnacked  = MetricDesc("output_relp_events_unacknowledged", "Events a relp output holds that its server has not acknowledged yet.", "output")
)

// relpOutput sends each event as a RELP syslog command over one session
// at a time, and counts a buffer delivered once the server has answered
// 200 to every event of it.
//
// It keeps a copy of every event not yet acknowledged, in order, and
// sends at most Window of them ahead of the answers. (It copies them
// rather than keeping their buffers, as the Kafka output does: the
// window counts events, and with an input that sends one event a batch,
// such as a relp or tcp input at a low rate, keeping the buffers would
// hold up to Window of the daemon's output buffers.) When the session
// breaks (a write or read fails, an answer takes longer than Timeout,
// the server answers other than 200), Write or Flush returns the error
// and the daemon calls Flush again after a backoff: that opens a new
// session and sends every event not acknowledged again, in order,
// before any new one. Nothing is lost; an event the server had taken but
// not yet acknowledged when the session broke arrives twice, so a
// receiver holds at most Window duplicates per break (counted, as an
// upper bound, in output_relp_events_resent_total).
//
// Write, Flush and Close are called from the output goroutine; each
// session has a goroutine that reads the server's answers and hands them
// over a channel, so the output's own state has one owner.
type relpOutput struct {
	addr   string
	set    *RELPOutputConfig
	tlsCfg *tls.Config
	st     *OutputStats
	log    *slog.Logger
	stop   <-chan struct{}

	// The events not yet acknowledged: evs[i] is data[evs[i].off:
	// evs[i].end]; evs[:head] are acknowledged (dropped at the next
	// Write), and the event evs[i] has the sequence number seq0+i.
	data    []byte
	evs     []relpEvent
	head    int
	seq0    uint64
	pending []relpPending // the buffers not yet delivered, in order
	sentMax uint64        // one past the highest sequence number ever sent

	s *relpSession // nil between sessions

	frame                    []byte
	sessions, breaks, resent atomic.Uint64
	unacked                  atomic.Int64
}

type relpEvent struct {
	off, end int
	acked    bool
}

// relpPending is a buffer whose last event has the sequence number
// end-1.
type relpPending struct {
	d   Delivery
	end uint64
}

// relpSession is one connection: the events evs[base:sent] were sent on
// it, evs[base] with the transaction number first.
type relpSession struct {
	c          net.Conn
	w          *bufio.Writer
	answers    chan []relpAnswer // in the order read
	done       chan struct{}     // closed when the session is given up
	readerDone chan struct{}
	base, sent int
	first      uint32
	next       uint32 // the transaction number of the next command
}

// relpAnswer is what the session's reader hands over: an answer, or the
// error that ended the reading (the last of its batch).
type relpAnswer struct {
	a   relp.Answer
	err error
}

func newRELPOutput(oc *OutputConfig, env *Env) (Output, error) {
	set := oc.Settings.(*RELPOutputConfig)
	o := &relpOutput{addr: oc.Address, set: set, st: env.OutputStats(), log: env.Log, stop: env.Stop}
	if set.TLS != nil {
		host, _, err := net.SplitHostPort(oc.Address)
		if err != nil {
			return nil, err
		}
		if o.tlsCfg, err = set.TLS.Config(host); err != nil {
			return nil, err
		}
	}
	return o, nil
}

func (o *relpOutput) Stats() *OutputStats { return o.st }

// Write copies b's events (each line without its newline) and sends them
// as far as the window lets it, waiting for answers when it is full.
func (o *relpOutput) Write(b *Buffer) error {
	o.compact()
	p := b.B
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			i = len(p)
		}
		off := len(o.data)
		o.data = append(o.data, p[:i]...)
		o.evs = append(o.evs, relpEvent{off: off, end: len(o.data)})
		p = p[min(i+1, len(p)):]
	}
	o.pending = append(o.pending, relpPending{d: b.Delivery(o.st), end: o.seq0 + uint64(len(o.evs))})
	o.unacked.Store(int64(len(o.evs) - o.head))
	o.deliver()
	if o.s == nil {
		if err := o.open(); err != nil {
			return err
		}
	}
	if err := o.send(); err != nil {
		return err
	}
	return o.drain()
}

// Flush sends what is not sent yet (on a new session, if the last one
// broke) and waits until the server has acknowledged every event.
func (o *relpOutput) Flush() error {
	if o.head == len(o.evs) {
		return nil
	}
	if o.s == nil {
		if err := o.open(); err != nil {
			return err
		}
	}
	if err := o.send(); err != nil {
		return err
	}
	return o.await(func() bool { return o.head == len(o.evs) })
}

// Close flushes, then closes the session: it sends close and waits for
// the answer.
func (o *relpOutput) Close() error {
	err := o.Flush()
	if s := o.s; s != nil {
		cerr := o.closeSession()
		if err == nil {
			err = cerr
		}
	}
	return err
}

func (o *relpOutput) Collect(m MetricSink) {
	m.Counter(mRELPSessions, o.sessions.Load(), o.st.Name)
	m.Counter(mRELPBreaks, o.breaks.Load(), o.st.Name)
	m.Counter(mRELPResent, o.resent.Load(), o.st.Name)
	m.Gauge(mRELPUnacked, float64(o.unacked.Load()), o.st.Name)
}

// compact drops the acknowledged events.
func (o *relpOutput) compact() {
	if o.head == 0 {
		return
	}
	if o.head == len(o.evs) {
		o.data, o.evs = o.data[:0], o.evs[:0]
	} else {
		shift := o.evs[o.head].off
		o.data = o.data[:copy(o.data, o.data[shift:])]
		n := copy(o.evs, o.evs[o.head:])
		o.evs = o.evs[:n]
		for i := range o.evs {
			o.evs[i].off -= shift
			o.evs[i].end -= shift
		}
	}
	if s := o.s; s != nil {
		// The session's first event is now the first not acknowledged.
		s.first = relp.AddTxnr(s.first, o.head-s.base)
		s.base, s.sent = 0, s.sent-o.head
	}
	o.seq0 += uint64(o.head)
	o.head = 0
}

// deliver reports the buffers whose events are all acknowledged.
func (o *relpOutput) deliver() {
	acked := o.seq0 + uint64(o.head)
	n := 0
	for n < len(o.pending) && o.pending[n].end <= acked {
		o.pending[n].d.Done()
		n++
	}
	if n > 0 {
		clear(o.pending[:n])
		o.pending = o.pending[:copy(o.pending, o.pending[n:])]
	}
}

// open connects and opens a session: the server must answer the offers
// with 200 (relp.CheckOpen). The events not acknowledged are sent on it
// from the first.
func (o *relpOutput) open() error {
	// The connection and the handshake end at Timeout, or when the
	// daemon gives up.
	ctx, cancel := context.WithTimeout(context.Background(), o.set.Timeout)
	defer cancel()
	go func() {
		select {
		case <-o.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", o.addr)
	if err != nil {
		return errConnect{err}
	}
	if err := c.SetDeadline(time.Now().Add(o.set.Timeout)); err != nil {
		c.Close()
		return errConnect{err}
	}
	if o.tlsCfg != nil {
		tc := tls.Client(c, o.tlsCfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			c.Close()
			return errConnect{fmt.Errorf("tls: %w", err)}
		}
		c = tc
	}
	w := bufio.NewWriterSize(c, 64<<10)
	offers := relp.ClientOffers("enrichd," + version.Version + ",https://github.com/lutkit/lutkit")
	o.frame = relp.AppendFrame(o.frame[:0], 1, relp.CmdOpen, offers)
	r := relp.NewReader(c, relpMaxAnswer)
	if _, err = w.Write(o.frame); err == nil {
		err = w.Flush()
	}
	var a relp.Answer
	if err == nil {
		a, err = relp.ReadAnswer(r)
	}
	if err == nil {
		switch {
		case a.ServerClose:
			err = errors.New("relp: the server closed the session at open")
		case a.Txnr != 1:
			err = fmt.Errorf("relp: the server answered open with transaction number %d", a.Txnr)
		default:
			err = relp.CheckOpen(a.Rsp)
		}
	}
	if err == nil {
		err = c.SetDeadline(time.Time{})
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) {
		err = fmt.Errorf("the server closed the connection before it answered open (with TLS, it may have refused the client certificate): %w", err)
	}
	if err != nil {
		c.Close()
		return errConnect{fmt.Errorf("open: %w", err)}
	}
	s := &relpSession{c: c, w: w, answers: make(chan []relpAnswer, 4), done: make(chan struct{}),
		readerDone: make(chan struct{}), base: o.head, sent: o.head, first: 2, next: 2}
	go s.read(r)
	o.s = s
	o.sessions.Add(1)
	return nil
}

// read hands the server's answers over until the connection ends or the
// session is given up: in batches, of those read without waiting, so that
// a window of answers costs the output one wake-up, not one each.
func (s *relpSession) read(r *relp.Reader) {
	defer close(s.readerDone)
	for {
		batch := make([]relpAnswer, 0, 32)
		var err error
		for {
			var a relp.Answer
			a, err = relp.ReadAnswer(r)
			a.Rsp.Extra = nil // the output reads only the status
			batch = append(batch, relpAnswer{a, err})
			if err != nil || r.Buffered() == 0 || len(batch) == 1024 {
				break
			}
		}
		select {
		case s.answers <- batch:
		case <-s.done:
			return
		}
		if err != nil {
			return
		}
	}
}

// send sends the events not sent on this session, Window at most ahead
// of the answers.
func (o *relpOutput) send() error {
	s := o.s
	if s.sent == len(o.evs) {
		return nil
	}
	if err := s.c.SetWriteDeadline(time.Now().Add(o.set.Timeout)); err != nil {
		return o.broke(err)
	}
	// With the window full, sending resumes as soon as one answer frees
	// a place, as librelp's client does. Waiting for more (to send in
	// runs) stalls: librelp's server writes each answer on its own, and
	// with nothing sent to carry the acknowledgements of its segments
	// back, its Nagle algorithm holds answers for the client's delayed
	// acknowledgement (a hundred times slower, in BenchmarkRELPOutput).
	resume := o.set.Window - 1
	for s.sent < len(o.evs) {
		if s.sent-o.head >= o.set.Window {
			if err := s.w.Flush(); err != nil {
				return o.broke(err)
			}
			if err := o.await(func() bool { return s.sent-o.head <= resume }); err != nil {
				return err
			}
			if err := s.c.SetWriteDeadline(time.Now().Add(o.set.Timeout)); err != nil {
				return o.broke(err)
			}
		}
		ev := o.evs[s.sent]
		// Framed in the writer's free space: no copy when it fits.
		frame := relp.AppendFrame(s.w.AvailableBuffer(), s.next, relp.CmdSyslog, o.data[ev.off:ev.end])
		if _, err := s.w.Write(frame); err != nil {
			return o.broke(err)
		}
		if seq := o.seq0 + uint64(s.sent); seq < o.sentMax {
			o.resent.Add(1)
		} else {
			o.sentMax = seq + 1
		}
		o.st.Bytes.Add(uint64(len(frame)))
		s.sent++
		s.next = relp.NextTxnr(s.next)
	}
	if err := s.w.Flush(); err != nil {
		return o.broke(err)
	}
	return nil
}

// await takes answers until done returns true; each answer may take
// Timeout at most.
func (o *relpOutput) await(done func() bool) error {
	var t *time.Timer
	for !done() {
		if t == nil {
			t = time.NewTimer(o.set.Timeout)
			defer t.Stop()
		} else {
			t.Reset(o.set.Timeout)
		}
		select {
		case batch := <-o.s.answers:
			if err := o.takeAll(batch); err != nil {
				return err
			}
		case <-t.C:
			return o.broke(fmt.Errorf("relp: no answer within %s: %w", o.set.Timeout, os.ErrDeadlineExceeded))
		case <-o.stop:
			return o.broke(errors.New("relp: the daemon gave up waiting for answers"))
		}
	}
	return nil
}

// drain takes the answers that are already there.
func (o *relpOutput) drain() error {
	for {
		select {
		case batch := <-o.s.answers:
			if err := o.takeAll(batch); err != nil {
				return err
			}
		default:
			return nil
		}
	}
}

// takeAll takes a batch of answers, in order.
func (o *relpOutput) takeAll(batch []relpAnswer) error {
	for _, a := range batch {
		if err := o.take(a); err != nil {
			return err
		}
	}
	return nil
}

// take acknowledges the event an answer is for; an answer other than 200,
// to no event sent, or the end of the reading breaks the session.
func (o *relpOutput) take(a relpAnswer) error {
	s := o.s
	switch {
	case a.err != nil:
		return o.broke(fmt.Errorf("relp: reading answers: %w", a.err))
	case a.a.ServerClose:
		return o.broke(fmt.Errorf("relp: the server closed the session: %w", errPeerClosed))
	}
	i := s.base + relp.TxnrDistance(s.first, a.a.Txnr)
	if a.a.Txnr == 0 || i < o.head || i >= s.sent || o.evs[i].acked {
		return o.broke(fmt.Errorf("relp: the server answered transaction %d, which waits for no answer", a.a.Txnr))
	}
	if !a.a.Rsp.OK() {
		return o.broke(fmt.Errorf("relp: the server answered transaction %d with %03d %s", a.a.Txnr, a.a.Rsp.Code, a.a.Rsp.Text))
	}
	o.evs[i].acked = true
	if i == o.head {
		for o.head < s.sent && o.evs[o.head].acked {
			o.head++
		}
		o.unacked.Store(int64(len(o.evs) - o.head))
		o.deliver()
	}
	return nil
}

// broke gives up the session after err; the events not acknowledged are
// sent again on the next one.
func (o *relpOutput) broke(err error) error {
	s := o.s
	o.endSession()
	o.breaks.Add(1)
	o.log.Warn("relp session broken; the events not acknowledged are sent again on a new session",
		"events_unacknowledged", len(o.evs)-o.head, "sent_on_session", s.sent-s.base, "err", err)
	return err
}

// endSession closes the connection and waits for its reader.
func (o *relpOutput) endSession() {
	s := o.s
	close(s.done)
	s.c.Close()
	<-s.readerDone
	for i := o.head; i < s.sent; i++ {
		o.evs[i].acked = false
	}
	o.s = nil
}

// closeSession sends close (everything is acknowledged) and waits for
// its answer, Timeout at most.
func (o *relpOutput) closeSession() error {
	s := o.s
	txnr := s.next
	o.frame = relp.AppendFrame(o.frame[:0], txnr, relp.CmdClose, nil)
	err := s.c.SetWriteDeadline(time.Now().Add(o.set.Timeout))
	if err == nil {
		_, err = s.w.Write(o.frame)
	}
	if err == nil {
		err = s.w.Flush()
	}
	t := time.NewTimer(o.set.Timeout)
	defer t.Stop()
	for err == nil {
		select {
		case batch := <-s.answers:
			for _, a := range batch {
				switch {
				case a.err != nil:
					err = fmt.Errorf("relp: close: %w", a.err)
				case a.a.ServerClose: // the hint that follows the answer
				case a.a.Txnr == txnr:
					o.endSession()
					return nil
				default:
					err = fmt.Errorf("relp: close: the server answered transaction %d", a.a.Txnr)
				}
				if err != nil {
					break
				}
			}
		case <-t.C:
			err = fmt.Errorf("relp: close: no answer within %s: %w", o.set.Timeout, os.ErrDeadlineExceeded)
		}
	}
	o.endSession()
	return err
}
