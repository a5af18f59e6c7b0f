package listen

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Reasons a connection is refused, as counted (Stats.Refused) and
// logged.
const (
	ReasonMaxConnections   = "max_connections"            // over limits.max_connections
	ReasonMaxPerSource     = "max_connections_per_source" // over limits.max_connections_per_source
	ReasonHandshakeTimeout = "handshake_timeout"          // the TLS handshake did not end in time
	ReasonNotTLS           = "not_tls"                    // plaintext (or garbage) sent to a TLS listener
	ReasonHandshake        = "handshake_failed"           // any other failed handshake (an old TLS version, no common cipher)
	ReasonNoClientCert     = "no_client_cert"             // mTLS: no certificate sent
	ReasonBadClientCert    = "bad_client_cert"            // mTLS: not signed by client_ca_file
	ReasonClientNotAllowed = "client_not_allowed"         // mTLS: not in allowed_clients
	ReasonClosed           = "closed_in_handshake"        // the client closed before the handshake ended (a port probe)
	numReasons             = 9
)

// Reasons lists every refusal reason, in the order of Stats.Refused.
var Reasons = [numReasons]string{ReasonMaxConnections, ReasonMaxPerSource, ReasonHandshakeTimeout, ReasonNotTLS,
	ReasonHandshake, ReasonNoClientCert, ReasonBadClientCert, ReasonClientNotAllowed, ReasonClosed}

// Options make a Listener.
type Options struct {
	// Name names the listener in logs (and its metrics, for the caller).
	Name string
	// TLS, when enabled (cert_file set), makes the listener speak TLS.
	TLS *TLS
	// Limits bound its connections. MaxConnections 0 sets no cap (the
	// caller keeps its own).
	Limits Limits
	Log    *slog.Logger
	// OnRefuse, when set, is called with a plaintext connection refused
	// over a cap before it is closed (to write the protocol's "too many
	// connections" answer).
	OnRefuse func(c net.Conn, reason string)
}

// Listener is a net.Listener that bounds and, with TLS, encrypts and
// authenticates its connections. Accept returns connections whose TLS
// handshake is done (a *tls.Conn; Identity gives its verified client).
type Listener struct {
	ln    net.Listener
	opts  Options
	certs *certs // nil: plaintext
	log   *slog.Logger

	ready     chan net.Conn
	closed    chan struct{}
	closeOnce sync.Once
	startOnce sync.Once
	wg        sync.WaitGroup // run
	admits    sync.WaitGroup // connections in admit
	draining  atomic.Bool    // Drain was called

	mu       sync.Mutex
	perSrc   map[netip.Addr]int
	pending  map[net.Conn]struct{} // in their handshake, or not yet taken
	drainBy  time.Time             // Drain's deadline: no handshake goes on past it
	accepted atomic.Uint64
	active   atomic.Int64
	refused  [numReasons]atomic.Uint64
	logs     refusalLog
}

// Listen listens on the TCP address addr.
func Listen(addr string, o Options) (*Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	l, err := New(ln, o)
	if err != nil {
		ln.Close()
		return nil, err
	}
	return l, nil
}

// New wraps ln; it reads the TLS files now, so that a listener that is
// made is one that can handshake.
func New(ln net.Listener, o Options) (*Listener, error) {
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.Limits.HandshakeTimeout == 0 {
		o.Limits.HandshakeTimeout = DefaultHandshakeTimeout
	}
	l := &Listener{ln: ln, opts: o, log: o.Log, ready: make(chan net.Conn), closed: make(chan struct{}),
		perSrc: map[netip.Addr]int{}, pending: map[net.Conn]struct{}{}}
	if o.TLS.Enabled() {
		c, err := newCerts(*o.TLS, o.Log)
		if err != nil {
			return nil, err
		}
		l.certs = c
	}
	return l, nil
}

// TLS reports whether the listener speaks TLS.
func (l *Listener) TLS() bool { return l.certs != nil }

// MutualTLS reports whether it requires client certificates.
func (l *Listener) MutualTLS() bool { return l.certs != nil && l.opts.TLS.ClientCAFile != "" }

// Addr returns the listener's address.
func (l *Listener) Addr() net.Addr { return l.ln.Addr() }

// Reload reads the certificate, key and client CA files again (SIGHUP);
// a failure keeps the previous ones, and is logged.
func (l *Listener) Reload() {
	if l.certs != nil {
		l.certs.reload("reload")
	}
}

// Close stops accepting; connections already returned by Accept stay
// open, those still in their handshake are closed.
func (l *Listener) Close() error {
	err := l.ln.Close()
	l.closeOnce.Do(func() { close(l.closed) })
	// Closed outside the lock: closing one frees its slot, under it.
	l.mu.Lock()
	pending := make([]net.Conn, 0, len(l.pending))
	for c := range l.pending {
		pending = append(pending, c)
	}
	l.mu.Unlock()
	for _, c := range pending {
		c.Close()
	}
	return err
}

// Accept returns the next connection within the limits, its handshake
// done.
func (l *Listener) Accept() (net.Conn, error) {
	l.startOnce.Do(func() {
		l.wg.Add(1)
		go l.run()
	})
	select {
	case c := <-l.ready:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

// run accepts connections, refuses those over the caps and hands the
// others to their handshake.
func (l *Listener) run() {
	defer l.wg.Done()
	var delay time.Duration
	for {
		raw, err := l.ln.Accept()
		if err != nil {
			select {
			case <-l.closed:
				return
			default:
			}
			if errors.Is(err, net.ErrClosed) {
				if !l.draining.Load() { // Drain closes it when done
					l.closeOnce.Do(func() { close(l.closed) })
				}
				return
			}
			// Out of descriptors and the like: back off and retry.
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			l.log.Warn("accept failed", "listener", l.opts.Name, "err", err)
			time.Sleep(delay)
			continue
		}
		delay = 0
		l.handle(raw)
	}
}

// handle takes a connection the socket accepted: refused over the caps,
// or handed to its handshake.
func (l *Listener) handle(raw net.Conn) {
	l.accepted.Add(1)
	src := sourceOf(raw)
	if reason := l.take(src); reason != "" {
		l.refuse(raw, reason, src, nil)
		return
	}
	c := &conn{Conn: raw, l: l, src: src}
	l.mu.Lock()
	l.pending[c] = struct{}{}
	l.mu.Unlock()
	l.admits.Add(1)
	go l.admit(c)
}

// take reserves a slot for a connection from src, or says why not.
func (l *Listener) take(src netip.Addr) string {
	lim := l.opts.Limits
	l.mu.Lock()
	defer l.mu.Unlock()
	if lim.MaxConnections > 0 && l.active.Load() >= int64(lim.MaxConnections) {
		return ReasonMaxConnections
	}
	if lim.MaxConnectionsPerSource > 0 && l.perSrc[src] >= lim.MaxConnectionsPerSource {
		return ReasonMaxPerSource
	}
	l.perSrc[src]++
	l.active.Add(1)
	return ""
}

// release frees the slot of a connection from src.
func (l *Listener) release(src netip.Addr) {
	l.mu.Lock()
	if l.perSrc[src]--; l.perSrc[src] <= 0 {
		delete(l.perSrc, src)
	}
	l.mu.Unlock()
	l.active.Add(-1)
}

// admit does the handshake of a connection and hands it to Accept. Close
// closes it while it is pending (in its handshake); once that is done, it
// is admit's, then Accept's caller's.
func (l *Listener) admit(c *conn) {
	defer l.admits.Done()
	var out net.Conn = c
	if l.certs != nil {
		tc := tls.Server(c, l.certs.config())
		l.mu.Lock()
		c.handshakeBy = time.Now().Add(l.opts.Limits.HandshakeTimeout)
		if !l.drainBy.IsZero() && l.drainBy.Before(c.handshakeBy) {
			c.handshakeBy = l.drainBy
		}
		_ = c.SetDeadline(c.handshakeBy)
		l.mu.Unlock()
		err := tc.Handshake()
		l.unpend(c)
		if err != nil {
			l.refuse(tc, classify(err), c.src, err)
			return
		}
		_ = c.SetDeadline(time.Time{})
		out = tc
	} else {
		l.unpend(c)
	}
	select {
	case l.ready <- out:
	case <-l.closed:
		out.Close()
	}
}

func (l *Listener) unpend(c *conn) {
	l.mu.Lock()
	delete(l.pending, c)
	l.mu.Unlock()
}

// refuse counts, logs (at a bounded rate) and closes a connection.
func (l *Listener) refuse(c net.Conn, reason string, src netip.Addr, err error) {
	for i, r := range Reasons {
		if r == reason {
			l.refused[i].Add(1)
		}
	}
	if l.opts.OnRefuse != nil && l.certs == nil && err == nil {
		_ = c.SetWriteDeadline(time.Now().Add(time.Second))
		l.opts.OnRefuse(c, reason)
	}
	c.Close()
	if n, ok := l.logs.allow(time.Now()); ok {
		args := []any{"listener", l.opts.Name, "reason", reason, "remote", src.String()}
		if err != nil {
			args = append(args, "err", err.Error())
		}
		if n > 0 {
			args = append(args, "not_logged_since_last", n)
		}
		l.log.Warn("connection refused", args...)
	}
}

// classify names the reason of a failed handshake.
func classify(err error) string {
	var rh tls.RecordHeaderError
	var ne net.Error
	switch {
	case errors.Is(err, errNoClientCert):
		return ReasonNoClientCert
	case errors.Is(err, errBadClientCert):
		return ReasonBadClientCert
	case errors.Is(err, errNotAllowed):
		return ReasonClientNotAllowed
	case errors.As(err, &rh):
		return ReasonNotTLS
	case errors.Is(err, io.EOF), errors.Is(err, syscall.ECONNRESET):
		return ReasonClosed
	case errors.As(err, &ne) && ne.Timeout(), errors.Is(err, os.ErrDeadlineExceeded):
		return ReasonHandshakeTimeout
	}
	return ReasonHandshake
}

// Stats are a listener's counters.
type Stats struct {
	Accepted uint64 // connections accepted from the socket, refused ones included
	Active   int64  // open (their handshake included)
	// Refused counts refusals by reason, in the order of Reasons.
	Refused [numReasons]uint64
	// CertLoads counts the certificate loads that succeeded (the first
	// included), CertReloadFailures those that failed.
	CertLoads, CertReloadFailures uint64
}

// Stats returns the counters.
func (l *Listener) Stats() Stats {
	s := Stats{Accepted: l.accepted.Load(), Active: l.active.Load()}
	for i := range l.refused {
		s.Refused[i] = l.refused[i].Load()
	}
	if l.certs != nil {
		s.CertLoads, s.CertReloadFailures = l.certs.counts()
	}
	return s
}

// Limits returns the listener's limits.
func (l *Listener) Limits() Limits { return l.opts.Limits }

// conn is an accepted connection: closing it frees its slot, once.
type conn struct {
	net.Conn
	l           *Listener
	src         netip.Addr
	once        sync.Once
	handshakeBy time.Time // when its TLS handshake times out (under l.mu)
}

// Close frees the slot, then closes the socket: a client that sees its
// connection closed can connect again at once without being refused for
// the slot it held.
func (c *conn) Close() error {
	c.once.Do(func() { c.l.release(c.src) })
	return c.Conn.Close()
}

func sourceOf(c net.Conn) netip.Addr {
	if ta, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		a, _ := netip.AddrFromSlice(ta.IP)
		return a.Unmap()
	}
	return netip.Addr{}
}

// Identity returns the verified client certificate of a connection a
// mutual-TLS Listener accepted: the certificate's subject ("CN=...,O=...")
// and the certificate. It returns "" and nil for other connections.
func Identity(c net.Conn) (string, *x509.Certificate) {
	tc, ok := c.(*tls.Conn)
	if !ok {
		return "", nil
	}
	inner, ok := tc.NetConn().(*conn)
	if !ok || !inner.l.MutualTLS() {
		return "", nil
	}
	cs := tc.ConnectionState()
	if len(cs.PeerCertificates) == 0 {
		return "", nil
	}
	return cs.PeerCertificates[0].Subject.String(), cs.PeerCertificates[0]
}

// refusalLog bounds the refusal log lines to one a second, counting those
// left out.
type refusalLog struct {
	mu      sync.Mutex
	last    time.Time
	skipped uint64
}

func (r *refusalLog) allow(now time.Time) (skipped uint64, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if now.Sub(r.last) < time.Second {
		r.skipped++
		return 0, false
	}
	r.last, skipped, r.skipped = now, r.skipped, 0
	return skipped, true
}

// RefusedFor returns the count of refusals for reason.
func (s Stats) RefusedFor(reason string) uint64 {
	for i, r := range Reasons {
		if r == reason {
			return s.Refused[i]
		}
	}
	return 0
}
