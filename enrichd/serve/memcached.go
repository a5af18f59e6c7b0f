package serve

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lutkit/lutkit/format"
	"github.com/lutkit/lutkit/internal/rowjson"
	"github.com/lutkit/lutkit/reader"
	"github.com/lutkit/lutkit/tables"
)

// MemcachedOptions configure the memcached listener.
type MemcachedOptions struct {
	// DefaultTable is the table for keys without a "table:" prefix (or
	// whose prefix names no table). Empty: such keys miss.
	DefaultTable string
	// ValueColumn, when set, makes the value that column's bytes instead
	// of the row as a JSON object.
	ValueColumn string
	// MaxMatches, above 1, makes the value of a .lut key a JSON array of
	// up to that many rows that match it, the most specific first (see
	// http_matches.go); with ValueColumn, an array of that column's
	// values, as JSON. A key that matches nothing misses, as with one.
	MaxMatches int
	// Version is what "version" (and the binary VERSION) answers, default
	// MemcachedVersion. Clients parse it as memcached's: libmemcached
	// reads a major.minor.micro number first and refuses anything else.
	Version string
	// MaxConnections caps the open connections (default
	// DefaultMemcachedMaxConnections); a connection over the cap is
	// answered "ERROR Too many open connections" and closed, as
	// memcached does.
	MaxConnections int
	// IdleTimeout closes a connection that sends nothing, or does not
	// read what it is sent, for this long (0: never, memcached's default).
	IdleTimeout time.Duration
	Logger      *slog.Logger
}

const (
	// MaxKeyLength is memcached's key length limit.
	MaxKeyLength = 250
	// MemcachedVersion is the default answer to "version": the memcached
	// release whose text, meta and binary answers the listener was
	// compared with, then the server's name.
	MemcachedVersion = "1.6.18-lutkit"
	// DefaultMemcachedMaxConnections is memcached's own default (-c).
	DefaultMemcachedMaxConnections = 1024
)

const (
	mcReadBuf  = 64 << 10
	mcWriteBuf = 64 << 10
	// tooManyConns is what memcached writes to a connection over its cap
	// before closing it.
	tooManyConns = "ERROR Too many open connections\r\n"
)

// Protocols of the memcached listener, as counted in Stats.Requests.
const (
	ProtoText   = iota // the classic text protocol: get, gets, stats, ...
	ProtoMeta          // the meta commands of the text protocol: mg, mn, ...
	ProtoBinary        // the binary protocol (requests with magic 0x80)
	numProtos
)

// ProtocolNames name the protocols, indexed by ProtoText, ProtoMeta and
// ProtoBinary.
var ProtocolNames = [numProtos]string{"text", "meta", "binary"}

// Memcached is a read-only memcached server over a table set. Each
// connection speaks the protocol its first byte announces, as with
// memcached: 0x80 starts the binary protocol, anything else the text
// protocol with its meta commands. Reads answer "table:key" keys with the
// row as JSON (or one column); every write is refused and the connection
// stays in step (see memcached_text.go, memcached_meta.go and
// memcached_binary.go).
type Memcached struct {
	set  *liveSet
	opts MemcachedOptions
	log  *slog.Logger

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	lns    []net.Listener
	closed bool
	wg     sync.WaitGroup

	started   time.Time
	hits      atomic.Uint64
	misses    atomic.Uint64
	requests  [numProtos]atomic.Uint64
	refused   [numProtos]atomic.Uint64
	currConns atomic.Int64
	totConns  atomic.Uint64
	rejected  atomic.Uint64
	idle      atomic.Uint64
}

// NewMemcached returns a server over set.
func NewMemcached(set *tables.Set, opts MemcachedOptions) *Memcached {
	if opts.Version == "" {
		opts.Version = MemcachedVersion
	}
	if opts.MaxConnections <= 0 {
		opts.MaxConnections = DefaultMemcachedMaxConnections
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Memcached{set: newLiveSet(set), opts: opts, log: opts.Logger, conns: map[net.Conn]struct{}{}, started: time.Now()}
}

// Serve accepts connections on ln until Close.
func (s *Memcached) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		ln.Close()
		return net.ErrClosed
	}
	s.lns = append(s.lns, ln)
	s.mu.Unlock()
	var delay time.Duration
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, os.ErrDeadlineExceeded) {
				return nil
			}
			// Out of descriptors and the like: back off and retry.
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			s.log.Warn("memcached: accept failed", "err", err)
			time.Sleep(delay)
			continue
		}
		delay = 0
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			c.Close()
			return nil
		}
		if len(s.conns) >= s.opts.MaxConnections {
			s.mu.Unlock()
			s.rejected.Add(1)
			// The refusal is told when the client can take it within a
			// second; the connection is closed either way.
			if c.SetWriteDeadline(time.Now().Add(time.Second)) == nil {
				_, _ = io.WriteString(c, tooManyConns)
			}
			c.Close()
			continue
		}
		s.conns[c] = struct{}{}
		s.currConns.Add(1)
		s.totConns.Add(1)
		s.wg.Add(1)
		s.mu.Unlock()
		go s.handle(c)
	}
}

// RefuseConnection writes to a plaintext connection refused over a cap of
// the listener (max_connections_per_source) what memcached writes to a
// connection over its cap, so that the client is told why it is closed.
// The caller sets the write deadline and closes the connection.
func RefuseConnection(c net.Conn, _ string) { _, _ = io.WriteString(c, tooManyConns) }

// Close stops the listeners, closes every connection and waits for their
// goroutines.
func (s *Memcached) Close() error {
	s.mu.Lock()
	s.closed = true
	for _, ln := range s.lns {
		ln.Close()
	}
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return nil
}

// Stats are the listener's counters.
type Stats struct {
	// Hits and Misses count the keys looked up (a get of three keys
	// counts three); Gets is their sum.
	Hits, Misses, Gets uint64
	// Requests counts the commands read, by protocol (ProtoText,
	// ProtoMeta, ProtoBinary); Refused the writes among them, which the
	// listener refuses.
	Requests, Refused [numProtos]uint64
	// CurrConnections are open; TotalConnections were accepted;
	// RejectedConnections were refused over MaxConnections; IdleClosed
	// were closed by IdleTimeout.
	CurrConnections     int64
	TotalConnections    uint64
	RejectedConnections uint64
	IdleClosed          uint64
}

// Stats returns the counters.
func (s *Memcached) Stats() Stats {
	st := Stats{Hits: s.hits.Load(), Misses: s.misses.Load(),
		CurrConnections: s.currConns.Load(), TotalConnections: s.totConns.Load(),
		RejectedConnections: s.rejected.Load(), IdleClosed: s.idle.Load()}
	st.Gets = st.Hits + st.Misses
	for i := range st.Requests {
		st.Requests[i] = s.requests[i].Load()
		st.Refused[i] = s.refused[i].Load()
	}
	return st
}

func (s *Memcached) handle(c net.Conn) {
	defer func() {
		c.Close()
		s.currConns.Add(-1)
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		s.wg.Done()
	}()
	defer guardFaults()()
	defer s.recoverFault()
	var rw io.ReadWriter = c
	if s.opts.IdleTimeout > 0 {
		rw = &idleConn{Conn: c, idle: s.opts.IdleTimeout}
	}
	mc := s.newConn(rw, rw)
	mc.serve()
	if mc.err != nil {
		var ne net.Error
		if errors.As(mc.err, &ne) && ne.Timeout() {
			s.idle.Add(1)
		}
	}
}

// idleConn gives every read and write of a connection IdleTimeout to
// make progress.
type idleConn struct {
	net.Conn
	idle time.Duration
}

func (c *idleConn) Read(p []byte) (int, error) {
	if err := c.SetReadDeadline(time.Now().Add(c.idle)); err != nil {
		return 0, err
	}
	return c.Conn.Read(p)
}

func (c *idleConn) Write(p []byte) (int, error) {
	if err := c.SetWriteDeadline(time.Now().Add(c.idle)); err != nil {
		return 0, err
	}
	return c.Conn.Write(p)
}

// mcConn is one connection's state: its buffers are reused by every
// command, so that a get allocates nothing.
type mcConn struct {
	s   *Memcached
	in  *flushReader
	r   *bufio.Reader
	w   *bufio.Writer
	err error // the read or write error that ended the connection
	val []byte
	key []byte
	num [24]byte
	// views holds the rows of a MaxMatches lookup.
	views []reader.View
	// binary protocol: the request being answered and its key.
	req  binHeader
	bkey []byte
	// text commands: the tokens of the line being answered; dkey holds a
	// meta command's base64-decoded key.
	toks [][]byte
	dkey []byte
}

func (s *Memcached) newConn(r io.Reader, w io.Writer) *mcConn {
	c := &mcConn{s: s, w: bufio.NewWriterSize(w, mcWriteBuf),
		val: make([]byte, 0, 4096), key: make([]byte, 0, 256), bkey: make([]byte, 0, 256),
		toks: make([][]byte, 0, 24)}
	c.in = &flushReader{r: r, w: c.w}
	c.r = bufio.NewReaderSize(c.in, mcReadBuf)
	return c
}

// flushReader writes the answers waiting in w before it reads: a client
// gets every answer to what it sent before the listener waits for more,
// and a pipeline of requests is answered in few writes.
type flushReader struct {
	r io.Reader
	w *bufio.Writer
}

func (f *flushReader) Read(p []byte) (int, error) {
	if f.w.Buffered() > 0 {
		if err := f.w.Flush(); err != nil {
			return 0, err
		}
	}
	return f.r.Read(p)
}

// serve answers commands until the connection ends: the first byte picks
// the protocol for the connection's life, as memcached does.
func (c *mcConn) serve() {
	first, err := c.r.Peek(1)
	if err != nil {
		c.fail(err)
		return
	}
	step := c.textStep
	if first[0] == binReqMagic {
		step = c.binStep
	}
	for step() {
	}
	if err := c.w.Flush(); err != nil {
		c.fail(err)
	}
}

// fail records the error that ends the connection.
func (c *mcConn) fail(err error) {
	if c.err == nil {
		c.err = err
	}
}

// count adds a request of protocol p.
func (c *mcConn) count(p int) { c.s.requests[p].Add(1) }

// refuse counts a refused write of protocol p.
func (c *mcConn) refuse(p int) { c.s.refused[p].Add(1) }

// lookup resolves "table:key" (or key in the default table), leaves the
// value in c.val, and counts the hit or miss.
func (c *mcConn) lookup(snap *tables.Snapshot, k []byte) bool {
	ok := c.find(snap, k)
	if ok {
		c.s.hits.Add(1)
	} else {
		c.s.misses.Add(1)
	}
	return ok
}

func (c *mcConn) find(snap *tables.Snapshot, k []byte) bool {
	name, key := c.s.opts.DefaultTable, k
	if i := bytes.IndexByte(k, ':'); i > 0 {
		if n := bstr(k[:i]); snap.LUT(n) != nil || snap.MMDB(n) != nil {
			name, key = n, k[i+1:]
		}
	}
	if name == "" {
		return false
	}
	if t := snap.LUT(name); t != nil {
		var tk []byte
		tk, c.key = tableKey(t, key, comma, c.key)
		if n := c.s.opts.MaxMatches; n > 1 {
			return c.findMatches(t, tk, n)
		}
		v, ok := t.Lookup(tk)
		if !ok {
			return false
		}
		if col := c.s.opts.ValueColumn; col != "" {
			i := t.ColumnIndex(col)
			if i < 0 {
				return false
			}
			c.val = append(c.val[:0], v.Col(i)...)
			return true
		}
		c.val = appendRow(c.val[:0], t, v)
		return true
	}
	if m := snap.MMDB(name); m != nil {
		var ok bool
		several := c.s.opts.MaxMatches > 1
		if several {
			c.val = append(c.val[:0], '[')
		}
		c.val, ok, _ = appendRecord(c.val[:len(c.val)], m, key)
		if ok && several {
			c.val = append(c.val, ']')
		}
		return ok
	}
	return false
}

// findMatches is find of up to n rows matching key in t.
func (c *mcConn) findMatches(t *reader.Table, key []byte, n int) bool {
	if cap(c.views) < n {
		c.views = make([]reader.View, n)
	}
	col := c.s.opts.ValueColumn
	if col == "" {
		var ok bool
		c.val, ok = appendMatches(c.val[:0], t, key, c.views[:n], lookupQuery{})
		return ok
	}
	ci := t.ColumnIndex(col)
	if ci < 0 {
		return false
	}
	m := t.Match(key, c.views[:n])
	if m == 0 {
		return false
	}
	var typ format.ColumnType
	if ts := t.ColumnTypes(); ts != nil {
		typ = ts[ci]
	}
	c.val = append(c.val[:0], '[')
	for i, v := range c.views[:m] {
		if i > 0 {
			c.val = append(c.val, ',')
		}
		c.val = rowjson.AppendValue(c.val, typ, v.Col(ci))
	}
	c.val = append(c.val, ']')
	return true
}

var comma = []byte{','}
