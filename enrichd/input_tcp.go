package enrichd

import (
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lutkit/lutkit/enrichd/engine"
	"github.com/lutkit/lutkit/enrichd/internal/listen"
	"github.com/lutkit/lutkit/enrichd/parse"
	"github.com/lutkit/lutkit/internal/config"
)

func init() {
	RegisterInput(InputKind{Type: "tcp", Endpoint: EndpointListen, Format: FormatSyslog,
		Settings: func() Settings { return &TCPInputConfig{} }, New: newTCPInput})
}

// TCPInputConfig are the settings of a tcp input: its tls: and limits:
// blocks (max_connections and idle_timeout are also taken beside them, as
// they were written before the limits: block).
type TCPInputConfig struct {
	listen.Config
}

// Keys are the tcp input's keys.
func (c *TCPInputConfig) Keys(d *config.Decoder, field string) config.Keys {
	return c.Config.Keys(d, field, true)
}

// SetDefaults fills the unset settings.
func (c *TCPInputConfig) SetDefaults() { c.Config.SetDefaults(DefaultMaxConnections) }

// Validate checks the settings.
func (c *TCPInputConfig) Validate(s config.Scope) { c.Config.Validate(s) }

// tcpInput accepts connections and reads each in its own goroutine:
// syslog with the framing each connection chooses (octet counting or
// newlines), JSON and raw lines newline-framed.
type tcpInput struct {
	cfg    *InputConfig
	set    *TCPInputConfig
	env    *Env
	ln     *listen.Listener
	stats  *InputStats
	fmt    engine.Format
	framer sync.Pool
	stopState

	wg   sync.WaitGroup // the accept loop and the connections
	done chan struct{}

	mu    sync.Mutex
	conns map[net.Conn]struct{}

	connsIdle atomic.Uint64 // closed by idle_timeout
}

func newTCPInput(ic *InputConfig, env *Env) (Input, error) {
	set := ic.Settings.(*TCPInputConfig)
	ln, err := listen.Listen(ic.Listen, set.Options(ic.Name, env.Log))
	if err != nil {
		return nil, err
	}
	return &tcpInput{cfg: ic, set: set, env: env, ln: ln, stats: env.InputStats(),
		fmt: ic.Format.code(), done: make(chan struct{}), conns: map[net.Conn]struct{}{}}, nil
}

func (t *tcpInput) Start() {
	t.wg.Add(1)
	go t.serve()
	go func() { t.wg.Wait(); close(t.done) }()
}

func (t *tcpInput) Done() <-chan struct{} { return t.done }
func (t *tcpInput) Addr() net.Addr        { return t.ln.Addr() }
func (t *tcpInput) Stats() *InputStats    { return t.stats }
func (t *tcpInput) Close() error          { return t.ln.Close() }

// Reload reads the TLS certificate files again (SIGHUP).
func (t *tcpInput) Reload() { t.ln.Reload() }

func (t *tcpInput) Collect(m MetricSink) {
	n := "input:" + t.stats.Name
	m.Listener(n, t.ln)
	m.ListenerIdleClosed(n, t.connsIdle.Load())
}

func (t *tcpInput) serve() {
	defer t.wg.Done()
	for {
		c, err := t.ln.Accept()
		if err != nil {
			if t.isStopping() || errors.Is(err, net.ErrClosed) {
				return
			}
			t.env.Log.Warn("accept failed", "err", err)
			time.Sleep(50 * time.Millisecond)
			continue
		}
		// While the input stops, the listener still hands over the
		// connections established before (its drain): each is read
		// until the drain's deadline (connReader), as the others.
		t.mu.Lock()
		t.conns[c] = struct{}{}
		t.wg.Add(1)
		t.mu.Unlock()
		go t.serveConn(c)
	}
}

// Stop stops the listener, which still hands over the connections
// established before (Listener.Drain), and gives every connection until
// deadline to deliver what it has sent.
func (t *tcpInput) Stop(deadline time.Time) {
	t.mu.Lock()
	t.stop(deadline)
	t.mu.Unlock()
	t.ln.Drain(deadline)
	t.mu.Lock()
	for c := range t.conns {
		// A connection that refuses the deadline is closed: its reader
		// ends on its own.
		_ = c.SetReadDeadline(deadline)
	}
	t.mu.Unlock()
}

func (t *tcpInput) serveConn(c net.Conn) {
	defer t.wg.Done()
	defer func() {
		t.mu.Lock()
		delete(t.conns, c)
		t.mu.Unlock()
		c.Close()
	}()
	bt := t.env.Batcher(t.stats, t.cfg.Format, false)
	if id, _ := listen.Identity(c); id != "" {
		bt.SetClient([]byte(id))
	}
	cr := &connReader{c: c, bt: bt, stop: &t.stopState, idleTimeout: t.set.Limits.IdleTimeout, idle: &t.connsIdle}
	// Wait for the first bytes before taking a framing buffer, so idle
	// connections cost no buffer.
	var first [256]byte
	n, err := cr.Read(first[:])
	if n == 0 {
		if err != nil && !errors.Is(err, io.EOF) && !isTimeout(err) {
			t.stats.FrameErrors.Add(1)
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
			switch {
			case isTimeout(err) && src.Cut():
				// A line the drain's deadline (or idle_timeout) cut was
				// delivered; an octet-counted frame cannot be: what was
				// read of it is dropped, and said.
				t.stats.FrameErrors.Add(1)
				reason := "idle_timeout"
				if t.isStopping() {
					reason = "drain_read_grace"
				}
				t.env.Log.Warn("a connection's reading ended inside an octet-counted frame: what was read of it is dropped, counted in enrichd_frame_errors_total",
					"remote", c.RemoteAddr().String(), "ended_by", reason)
			case !errors.Is(err, io.EOF) && !isTimeout(err) && !errors.Is(err, net.ErrClosed):
				t.stats.FrameErrors.Add(1)
				t.env.Log.Debug("connection ended with an error", "remote", c.RemoteAddr().String(), "err", err)
			}
			break
		}
		bt.Add(msg, trunc)
	}
	bt.Flush()
}
