package enrichd

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lutkit/lutkit/enrichd/internal/listen"
	"github.com/lutkit/lutkit/internal/config"
)

func init() {
	RegisterInput(InputKind{Type: "relp", Endpoint: EndpointListen, Format: FormatSyslog,
		Settings: func() Settings { return &RELPInputConfig{} }, New: newRELPInput})
}

// RELPInputConfig are the settings of a relp input: its tls: and limits:
// blocks, as a tcp input's.
type RELPInputConfig struct {
	listen.Config
}

// Keys are the relp input's keys.
func (c *RELPInputConfig) Keys(d *config.Decoder, field string) config.Keys {
	return c.Config.Keys(d, field, false)
}

// SetDefaults fills the unset settings.
func (c *RELPInputConfig) SetDefaults() { c.Config.SetDefaults(DefaultMaxConnections) }

// Validate checks the settings.
func (c *RELPInputConfig) Validate(s config.Scope) { c.Config.Validate(s) }

// relpMinFrame is the least data a relp input takes in one frame,
// librelp's default (imrelp's maxDataSize): a longer message is truncated
// to max_message_size, a longer frame ends the session.
const relpMinFrame = 128 << 10

// relpWriteTimeout bounds one write of answers to a client that does not
// read them; the session is closed then.
const relpInWriteTimeout = 30 * time.Second

// relpInput accepts RELP sessions (rsyslog's omrelp, librelp 1.x) and
// answers each syslog command once its event is safe: delivered by every
// output, or in the persistent queue (see relpInSession).
type relpInput struct {
	cfg   *InputConfig
	set   *RELPInputConfig
	env   *Env
	ln    *listen.Listener
	stats *InputStats
	stopState

	readers sync.WaitGroup // the accept loop and the sessions' readers
	writers sync.WaitGroup // the sessions' writers
	done    chan struct{}

	mu       sync.Mutex
	sessions map[*relpInSession]struct{}

	connsIdle atomic.Uint64 // closed by idle_timeout
	opened    atomic.Uint64 // sessions opened (open answered 200)
	acked     atomic.Uint64 // syslog commands answered 200 (written to the socket)
	refusedOp atomic.Uint64 // sessions ended for a protocol error
	lastWarn  atomic.Int64  // when a protocol error was last logged (UnixNano)
}

// warnAllowed bounds the log of protocol errors to one a second (they
// are all counted).
func (r *relpInput) warnAllowed() bool {
	now, last := time.Now().UnixNano(), r.lastWarn.Load()
	return now-last >= int64(time.Second) && r.lastWarn.CompareAndSwap(last, now)
}

var (
	mRELPInSessions = MetricDesc("relp_input_sessions_total", "RELP sessions opened on a relp input (open answered).", "input")
	mRELPInAcked    = MetricDesc("relp_input_acked_total", "Syslog commands a relp input acknowledged (rsp 200 written), each once its event was delivered by every output or stored in the queue.", "input")
	mRELPInErrors   = MetricDesc("relp_input_protocol_errors_total", "RELP sessions a relp input closed for a protocol error (a bad frame, a transaction number out of order, a command out of place).", "input")
)

func newRELPInput(ic *InputConfig, env *Env) (Input, error) {
	set := ic.Settings.(*RELPInputConfig)
	ln, err := listen.Listen(ic.Listen, set.Options(ic.Name, env.Log))
	if err != nil {
		return nil, err
	}
	return &relpInput{cfg: ic, set: set, env: env, ln: ln, stats: env.InputStats(),
		done: make(chan struct{}), sessions: map[*relpInSession]struct{}{}}, nil
}

func (r *relpInput) Start() {
	r.readers.Add(1)
	go r.serve()
	go func() { r.readers.Wait(); close(r.done) }()
}

func (r *relpInput) Done() <-chan struct{} { return r.done }
func (r *relpInput) Addr() net.Addr        { return r.ln.Addr() }
func (r *relpInput) Stats() *InputStats    { return r.stats }

// Reload reads the TLS certificate files again (SIGHUP).
func (r *relpInput) Reload() { r.ln.Reload() }

func (r *relpInput) Collect(m MetricSink) {
	n := "input:" + r.stats.Name
	m.Listener(n, r.ln)
	m.ListenerIdleClosed(n, r.connsIdle.Load())
	m.Counter(mRELPInSessions, r.opened.Load(), r.stats.Name)
	m.Counter(mRELPInAcked, r.acked.Load(), r.stats.Name)
	m.Counter(mRELPInErrors, r.refusedOp.Load(), r.stats.Name)
}

func (r *relpInput) serve() {
	defer r.readers.Done()
	for {
		c, err := r.ln.Accept()
		if err != nil {
			if r.isStopping() || errors.Is(err, net.ErrClosed) {
				return
			}
			r.env.Log.Warn("accept failed", "err", err)
			time.Sleep(50 * time.Millisecond)
			continue
		}
		r.mu.Lock()
		if r.isStopping() {
			r.mu.Unlock()
			c.Close()
			continue
		}
		s := newRELPInSession(r, c)
		r.sessions[s] = struct{}{}
		r.readers.Add(1)
		r.writers.Add(1)
		r.mu.Unlock()
		go s.writeLoop()
		go s.readLoop()
	}
}

// Stop closes the listener and stops reading the sessions at once: what a
// client sent and enrichd did not take is not acknowledged, and the
// client sends it again to the next enrichd. What was taken is answered
// once delivered, until Close.
func (r *relpInput) Stop(deadline time.Time) {
	r.mu.Lock()
	r.stop(deadline)
	r.mu.Unlock()
	r.ln.Close()
	r.mu.Lock()
	for s := range r.sessions {
		// A connection that refuses the deadline is closed: its reader
		// ends on its own.
		_ = s.c.SetReadDeadline(time.Now())
	}
	r.mu.Unlock()
}

// Close is called once the outputs delivered everything read: each
// session writes its last answers and the serverclose hint, and is
// closed.
func (r *relpInput) Close() error {
	err := r.ln.Close()
	r.mu.Lock()
	for s := range r.sessions {
		s.finish()
	}
	r.mu.Unlock()
	waited := make(chan struct{})
	go func() { r.writers.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(5 * time.Second):
		r.mu.Lock()
		for s := range r.sessions {
			s.c.Close()
		}
		r.mu.Unlock()
	}
	return err
}

func (r *relpInput) forget(s *relpInSession) {
	r.mu.Lock()
	delete(r.sessions, s)
	r.mu.Unlock()
}

// relpFrameLimit is the longest frame data a session reads.
func (r *relpInput) relpFrameLimit() int { return max(r.cfg.MaxMessageSize, relpMinFrame) }
