package enrichd

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/lutkit/lutkit/enrichd/engine"
	"github.com/lutkit/lutkit/enrichd/parse"
	"github.com/lutkit/lutkit/internal/config"
)

func init() {
	RegisterInput(InputKind{Type: "tcp", Endpoint: EndpointListen, Format: FormatSyslog, Settings: func() Settings { return &TCPInputConfig{} }})
	RegisterInput(InputKind{Type: "udp", Endpoint: EndpointListen, Format: FormatSyslog, Settings: func() Settings { return &UDPInputConfig{} }})
	RegisterInput(InputKind{Type: "file", Endpoint: EndpointPath, Format: FormatRaw})
}

// TCPInputConfig are the settings of a tcp input.
type TCPInputConfig struct {
	MaxConnections int           // connections open at once; more are closed at once
	IdleTimeout    time.Duration // close a connection silent this long (0: never)
}

// Keys are the tcp input's keys.
func (c *TCPInputConfig) Keys(d *config.Decoder, field string) config.Keys {
	return config.Keys{
		"max_connections": func(v *yaml.Node) { c.MaxConnections, _ = d.Size(v, config.Field(field, "max_connections")) },
		"idle_timeout":    func(v *yaml.Node) { c.IdleTimeout, _ = d.Duration(v, config.Field(field, "idle_timeout")) },
	}
}

// SetDefaults fills the unset settings.
func (c *TCPInputConfig) SetDefaults() {
	if c.MaxConnections == 0 {
		c.MaxConnections = DefaultMaxConnections
	}
}

// Validate checks the settings.
func (c *TCPInputConfig) Validate(s config.Scope) {
	if c.MaxConnections < 0 {
		s.Errorf("max_connections", "must be a positive integer, not %d", c.MaxConnections)
	}
}

// UDPInputConfig are the settings of a udp input.
type UDPInputConfig struct {
	ReadBuffer int // SO_RCVBUF
}

// Keys are the udp input's keys.
func (c *UDPInputConfig) Keys(d *config.Decoder, field string) config.Keys {
	return config.Keys{
		"read_buffer": func(v *yaml.Node) { c.ReadBuffer, _ = d.Size(v, config.Field(field, "read_buffer")) },
	}
}

// SetDefaults fills the unset settings.
func (c *UDPInputConfig) SetDefaults() {
	if c.ReadBuffer == 0 {
		c.ReadBuffer = DefaultUDPReadBuffer
	}
}

// Validate checks the settings.
func (c *UDPInputConfig) Validate(s config.Scope) {
	if c.ReadBuffer < 0 {
		s.Errorf("read_buffer", "must be a positive integer, not %d", c.ReadBuffer)
	}
}

// inputStats are one input's counters, exported as metrics.
type inputStats struct {
	name, typ string

	events      atomic.Uint64 // accepted into a batch
	bytes       atomic.Uint64
	malformed   atomic.Uint64 // parse errors: tagged and passed on
	truncated   atomic.Uint64 // oversize messages, truncated and tagged
	dropped     atomic.Uint64 // UDP: batches dropped because the queue was full
	frameErrors atomic.Uint64 // connections ended inside a frame, bad octet counts, read errors
	connsTotal  atomic.Uint64
	connsReject atomic.Uint64 // over max_connections
	connsIdle   atomic.Uint64 // closed by idle_timeout
	connsActive atomic.Int64
}

// messageSource yields framed messages (parse.Framer or lineSource).
type messageSource interface {
	Next() (msg []byte, truncated bool, err error)
}

// lineSource frames newline-delimited input (files, stdin, and TCP inputs
// of JSON or raw lines, where a leading digit must not switch to octet
// counting). A final line without '\n' is delivered.
type lineSource struct {
	r    *bufio.Reader
	max  int
	skip bool
}

func newLineSource(r io.Reader, max int) *lineSource {
	return &lineSource{r: bufio.NewReaderSize(r, max+2), max: max}
}

func (l *lineSource) Next() ([]byte, bool, error) {
	for {
		line, err := l.r.ReadSlice('\n')
		if l.skip {
			// Discarding the tail of an oversize line.
			if err == bufio.ErrBufferFull {
				continue
			}
			l.skip = false
			if err != nil {
				return nil, false, err
			}
			continue
		}
		trunc := false
		switch {
		case err == bufio.ErrBufferFull:
			l.skip = true
			trunc = true
		case err != nil && len(line) == 0:
			return nil, false, err
		}
		n := len(line)
		if n > 0 && line[n-1] == '\n' {
			n--
		}
		if n > 0 && line[n-1] == '\r' {
			n--
		}
		line = line[:n]
		if len(line) > l.max {
			line, trunc = line[:l.max], true
		}
		if len(line) == 0 {
			if err != nil {
				return nil, false, err
			}
			continue
		}
		return line, trunc, nil
	}
}

// batcher accumulates one input goroutine's messages into batches.
type batcher struct {
	d       *Daemon
	in      *inputStats
	fmt     engine.Format
	cur     *batch
	udp     bool      // never block: drop and count when no batch is free
	lastAck *ackEntry // the acknowledgement of the last batch flushed
}

// add appends msg, sending the batch when it is full.
func (bt *batcher) add(msg []byte, truncated bool) {
	if bt.take() {
		bt.put(msg, truncated)
	}
}

// take makes sure there is a current batch. A UDP input that finds none
// free drops the message, counts it and gets false.
func (bt *batcher) take() bool {
	if bt.cur != nil {
		return true
	}
	if bt.udp {
		select {
		case bt.cur = <-bt.d.freeBatches:
		default:
			bt.in.dropped.Add(1)
			return false
		}
	} else {
		bt.cur = <-bt.d.freeBatches
	}
	bt.cur.in, bt.cur.Format, bt.cur.start = bt.in, bt.fmt, time.Now()
	return true
}

// put appends msg to the current batch and sends the batch when it is
// full, reporting whether it did.
func (bt *batcher) put(msg []byte, truncated bool) bool {
	var fl uint8
	if truncated {
		fl = engine.FlagTruncated
	}
	bt.cur.Add(msg, fl)
	if len(bt.cur.Msgs) >= bt.d.cfg.Pipeline.BatchSize || len(bt.cur.Buf) >= bt.d.cfg.Pipeline.BatchBytes {
		bt.flush()
		return true
	}
	return false
}

func (bt *batcher) pending() bool { return bt.cur != nil }

// flush sends the current batch to the workers. TCP and file inputs block
// while the queue is full (backpressure); UDP drops and counts.
func (bt *batcher) flush() {
	b := bt.cur
	if b == nil {
		return
	}
	bt.cur = nil
	bt.lastAck = b.ack
	n, size := uint64(len(b.Msgs)), uint64(len(b.Buf))
	if bt.udp {
		select {
		case bt.d.work <- b:
		default:
			bt.in.dropped.Add(n)
			b.reset()
			bt.d.freeBatches <- b
			return
		}
	} else {
		bt.d.work <- b
	}
	bt.in.events.Add(n)
	bt.in.bytes.Add(size)
}

// ---- TCP

type tcpInput struct {
	d      *Daemon
	cfg    InputConfig
	ln     net.Listener
	stats  *inputStats
	fmt    engine.Format
	framer sync.Pool

	mu    sync.Mutex
	conns map[net.Conn]struct{}
}

func (t *tcpInput) serve(wg *sync.WaitGroup) {
	defer wg.Done()
	for {
		c, err := t.ln.Accept()
		if err != nil {
			if t.d.isStopping() || errors.Is(err, net.ErrClosed) {
				return
			}
			t.d.log.Warn("accept failed", "input", t.cfg.Name, "err", err)
			time.Sleep(50 * time.Millisecond)
			continue
		}
		t.stats.connsTotal.Add(1)
		if t.stats.connsActive.Load() >= int64(t.cfg.Settings.(*TCPInputConfig).MaxConnections) {
			t.stats.connsReject.Add(1)
			c.Close()
			continue
		}
		t.mu.Lock()
		if t.d.isStopping() {
			t.mu.Unlock()
			c.Close()
			continue
		}
		t.conns[c] = struct{}{}
		t.stats.connsActive.Add(1)
		wg.Add(1)
		t.mu.Unlock()
		go t.serveConn(c, wg)
	}
}

// stop closes the listener and gives every connection until deadline to
// deliver what it has sent.
func (t *tcpInput) stop(deadline time.Time) {
	t.ln.Close()
	t.mu.Lock()
	for c := range t.conns {
		c.SetReadDeadline(deadline)
	}
	t.mu.Unlock()
}

// connReader reads a connection for a Framer, flushing the pending batch
// when the connection goes quiet for the flush interval.
type connReader struct {
	t   *tcpInput
	c   net.Conn
	bt  *batcher
	pre []byte // bytes read before the Framer was attached
}

func (r *connReader) Read(p []byte) (int, error) {
	if len(r.pre) > 0 {
		n := copy(p, r.pre)
		r.pre = r.pre[n:]
		return n, nil
	}
	d := r.t.d
	flushEvery := d.cfg.Pipeline.FlushInterval
	for {
		if d.isStopping() {
			r.c.SetReadDeadline(d.drainDeadline())
		} else if r.bt.pending() {
			if time.Since(r.bt.cur.start) >= flushEvery {
				r.bt.flush()
				continue
			}
			r.c.SetReadDeadline(time.Now().Add(flushEvery))
		} else if idle := r.t.cfg.Settings.(*TCPInputConfig).IdleTimeout; idle > 0 {
			r.c.SetReadDeadline(time.Now().Add(idle))
		} else {
			r.c.SetReadDeadline(time.Time{})
		}
		n, err := r.c.Read(p)
		if n > 0 || err == nil {
			return n, err
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() && !d.isStopping() {
			if r.bt.pending() {
				r.bt.flush()
				continue
			}
			r.t.stats.connsIdle.Add(1)
		}
		return 0, err
	}
}

func (t *tcpInput) serveConn(c net.Conn, wg *sync.WaitGroup) {
	defer wg.Done()
	defer func() {
		t.mu.Lock()
		delete(t.conns, c)
		t.mu.Unlock()
		t.stats.connsActive.Add(-1)
		c.Close()
	}()
	bt := &batcher{d: t.d, in: t.stats, fmt: t.fmt}
	cr := &connReader{t: t, c: c, bt: bt}
	// Wait for the first bytes before taking a framing buffer, so idle
	// connections cost no buffer.
	var first [256]byte
	n, err := cr.Read(first[:])
	if n == 0 {
		if err != nil && err != io.EOF && !isTimeout(err) {
			t.stats.frameErrors.Add(1)
		}
		return
	}
	cr.pre = first[:n]
	var src messageSource
	if t.fmt == engine.Syslog {
		fr, _ := t.framer.Get().(*parse.Framer)
		if fr == nil {
			fr = parse.NewFramer(cr, t.cfg.MaxMessageSize)
		} else {
			fr.Reset(cr)
		}
		defer t.framer.Put(fr)
		src = fr
	} else {
		src = newLineSource(cr, t.cfg.MaxMessageSize)
	}
	for {
		msg, trunc, err := src.Next()
		if err != nil {
			if err != io.EOF && !isTimeout(err) && !errors.Is(err, net.ErrClosed) {
				t.stats.frameErrors.Add(1)
				t.d.log.Debug("connection ended with an error", "input", t.cfg.Name, "remote", c.RemoteAddr().String(), "err", err)
			}
			break
		}
		bt.add(msg, trunc)
	}
	bt.flush()
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// ---- UDP

type udpInput struct {
	d     *Daemon
	cfg   InputConfig
	conn  *net.UDPConn
	stats *inputStats
	fmt   engine.Format
}

func (u *udpInput) serve(wg *sync.WaitGroup) {
	defer wg.Done()
	d := u.d
	bt := &batcher{d: d, in: u.stats, fmt: u.fmt, udp: true}
	buf := make([]byte, u.cfg.MaxMessageSize+1)
	flushEvery := d.cfg.Pipeline.FlushInterval
	for {
		switch {
		case d.isStopping():
			u.conn.SetReadDeadline(d.drainDeadline())
		case bt.pending():
			if time.Since(bt.cur.start) >= flushEvery {
				bt.flush()
			}
			u.conn.SetReadDeadline(time.Now().Add(flushEvery))
		default:
			u.conn.SetReadDeadline(time.Time{})
		}
		n, _, err := u.conn.ReadFromUDPAddrPort(buf)
		if err != nil {
			if isTimeout(err) && !d.isStopping() {
				bt.flush()
				continue
			}
			if d.isStopping() || errors.Is(err, net.ErrClosed) {
				break
			}
			u.stats.frameErrors.Add(1)
			continue
		}
		msg := buf[:n]
		trunc := false
		if n > u.cfg.MaxMessageSize {
			msg, trunc = msg[:u.cfg.MaxMessageSize], true
		}
		for len(msg) > 0 && (msg[len(msg)-1] == '\n' || msg[len(msg)-1] == '\r' || msg[len(msg)-1] == 0) {
			msg = msg[:len(msg)-1]
		}
		if len(msg) == 0 {
			continue
		}
		bt.add(msg, trunc)
	}
	bt.flush()
}

// ---- file

type fileInput struct {
	d     *Daemon
	cfg   InputConfig
	stats *inputStats
	fmt   engine.Format
	r     io.ReadCloser
}

func (f *fileInput) serve(wg *sync.WaitGroup) {
	defer wg.Done()
	defer f.r.Close()
	d := f.d
	bt := &batcher{d: d, in: f.stats, fmt: f.fmt}
	src := newLineSource(f.r, f.cfg.MaxMessageSize)
	for !d.isStopping() {
		msg, trunc, err := src.Next()
		if err != nil {
			if err != io.EOF {
				f.stats.frameErrors.Add(1)
				d.log.Error("reading input failed", "input", f.cfg.Name, "err", err)
			}
			break
		}
		bt.add(msg, trunc)
	}
	bt.flush()
}

func openFileInput(path string) (io.ReadCloser, error) {
	if path == "-" {
		return io.NopCloser(os.Stdin), nil
	}
	return os.Open(path)
}
