package serve

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

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
	// Version is reported by the "version" command.
	Version string
	Logger  *slog.Logger
}

// MaxKeyLength is memcached's key length limit.
const MaxKeyLength = 250

const (
	mcReadBuf  = 64 << 10
	mcWriteBuf = 64 << 10
	// maxDiscard bounds the data block of a refused storage command that
	// is read and dropped to stay in step with the client (memcached's
	// default item size limit).
	maxDiscard = 1 << 20
)

// Memcached is a read-only memcached text-protocol server over a table
// set: "get"/"gets" of "table:key" keys answer the row as JSON (or one
// column); "version", "stats" and "quit" work; every storage or other
// write command is refused.
type Memcached struct {
	set  *tables.Set
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
	cmdGet    atomic.Uint64
	currConns atomic.Int64
	totConns  atomic.Uint64
}

// NewMemcached returns a server over set.
func NewMemcached(set *tables.Set, opts MemcachedOptions) *Memcached {
	if opts.Version == "" {
		opts.Version = "lutkit"
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Memcached{set: set, opts: opts, log: opts.Logger, conns: map[net.Conn]struct{}{}, started: time.Now()}
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
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go s.handle(c)
	}
}

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
	Hits, Misses, Gets uint64
	CurrConnections    int64
	TotalConnections   uint64
}

// Stats returns the counters.
func (s *Memcached) Stats() Stats {
	return Stats{Hits: s.hits.Load(), Misses: s.misses.Load(), Gets: s.cmdGet.Load(),
		CurrConnections: s.currConns.Load(), TotalConnections: s.totConns.Load()}
}

func (s *Memcached) handle(c net.Conn) {
	s.currConns.Add(1)
	s.totConns.Add(1)
	defer func() {
		c.Close()
		s.currConns.Add(-1)
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		s.wg.Done()
	}()
	mc := s.newConn(c, c)
	for {
		if mc.r.Buffered() == 0 {
			if mc.w.Flush() != nil {
				return
			}
		}
		if !mc.step() {
			mc.w.Flush()
			return
		}
	}
}

// mcConn is one connection's state: its buffers are reused by every
// command, so that a get allocates nothing.
type mcConn struct {
	s   *Memcached
	r   *bufio.Reader
	w   *bufio.Writer
	val []byte
	key []byte
	num [24]byte
}

func (s *Memcached) newConn(r io.Reader, w io.Writer) *mcConn {
	return &mcConn{s: s, r: bufio.NewReaderSize(r, mcReadBuf), w: bufio.NewWriterSize(w, mcWriteBuf),
		val: make([]byte, 0, 4096), key: make([]byte, 0, 256)}
}

// nextToken returns the first space-separated token of b and the rest.
func nextToken(b []byte) (tok, rest []byte) {
	i := 0
	for i < len(b) && b[i] == ' ' {
		i++
	}
	j := i
	for j < len(b) && b[j] != ' ' {
		j++
	}
	return b[i:j], b[j:]
}

// step reads and answers one command. It returns false when the
// connection must close.
func (c *mcConn) step() bool {
	line, err := c.r.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		c.w.WriteString("CLIENT_ERROR line too long\r\n")
		return false
	}
	if err != nil {
		return false
	}
	line = bytes.TrimRight(line[:len(line)-1], "\r")
	cmd, rest := nextToken(line)
	switch bstr(cmd) {
	case "get":
		return c.get(rest, false)
	case "gets":
		return c.get(rest, true)
	case "version":
		c.w.WriteString("VERSION ")
		c.w.WriteString(c.s.opts.Version)
		c.w.WriteString("\r\n")
	case "stats":
		c.stats(rest)
	case "quit":
		return false
	case "set", "add", "replace", "append", "prepend", "cas":
		return c.refuseStorage(cmd, rest)
	case "delete", "incr", "decr", "touch", "gat", "gats", "flush_all":
		c.w.WriteString("SERVER_ERROR read-only\r\n")
	case "verbosity":
		c.w.WriteString("OK\r\n")
	default:
		c.w.WriteString("ERROR\r\n")
	}
	return true
}

// refuseStorage reads the data block of a storage command (so that the
// next command is read in step) and refuses it.
func (c *mcConn) refuseStorage(cmd, rest []byte) bool {
	var toks [6][]byte
	n := 0
	for n < len(toks) {
		var t []byte
		t, rest = nextToken(rest)
		if len(t) == 0 {
			break
		}
		toks[n] = t
		n++
	}
	want := 4
	if bstr(cmd) == "cas" {
		want = 5
	}
	if n < want {
		c.w.WriteString("ERROR\r\n")
		return true
	}
	size, err := strconv.Atoi(bstr(toks[3]))
	if err != nil || size < 0 {
		c.w.WriteString("CLIENT_ERROR bad data chunk\r\n")
		return true
	}
	if size > maxDiscard {
		// memcached swallows the data too; refusing before reading it
		// keeps a hostile client from making us read without end.
		c.w.WriteString("SERVER_ERROR object too large for cache\r\n")
		return false
	}
	if _, err := c.r.Discard(size + 2); err != nil {
		return false
	}
	c.w.WriteString("SERVER_ERROR read-only\r\n")
	return true
}

func validKey(k []byte) bool {
	if len(k) > MaxKeyLength {
		return false
	}
	for _, b := range k {
		if b < 0x21 || b == 0x7f {
			return false
		}
	}
	return true
}

func (c *mcConn) get(keys []byte, withCAS bool) bool {
	// Check every key first, as memcached does: a bad one fails the
	// whole command.
	found := false
	for rest := keys; ; {
		var k []byte
		k, rest = nextToken(rest)
		if len(k) == 0 {
			break
		}
		found = true
		if !validKey(k) {
			c.w.WriteString("CLIENT_ERROR bad command line format\r\n")
			return true
		}
	}
	if !found {
		c.w.WriteString("ERROR\r\n")
		return true
	}
	snap := c.s.set.Acquire()
	defer snap.Release()
	for rest := keys; ; {
		var k []byte
		k, rest = nextToken(rest)
		if len(k) == 0 {
			break
		}
		c.s.cmdGet.Add(1)
		ok := c.lookup(snap, k)
		if !ok {
			c.s.misses.Add(1)
			continue
		}
		c.s.hits.Add(1)
		c.w.WriteString("VALUE ")
		c.w.Write(k)
		c.w.WriteString(" 0 ")
		c.w.Write(strconv.AppendInt(c.num[:0], int64(len(c.val)), 10))
		if withCAS {
			c.w.WriteByte(' ')
			c.w.Write(strconv.AppendUint(c.num[:0], snap.Generation(), 10))
		}
		c.w.WriteString("\r\n")
		c.w.Write(c.val)
		c.w.WriteString("\r\n")
	}
	c.w.WriteString("END\r\n")
	return true
}

// lookup resolves "table:key" (or key in the default table) and leaves
// the value in c.val.
func (c *mcConn) lookup(snap *tables.Snapshot, k []byte) bool {
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
		c.val = appendRow(c.val[:0], t.Columns(), v)
		return true
	}
	if m := snap.MMDB(name); m != nil {
		var ok bool
		c.val, ok, _ = appendRecord(c.val[:0], m, key)
		return ok
	}
	return false
}

func (c *mcConn) stats(args []byte) {
	if a, _ := nextToken(args); len(a) > 0 {
		// Sub-statistics (items, slabs, ...) hold nothing here.
		c.w.WriteString("END\r\n")
		return
	}
	s := c.s
	snap := s.set.Acquire()
	ntables := len(snap.Names())
	gen := snap.Generation()
	snap.Release()
	st := func(name string, v int64) {
		c.w.WriteString("STAT ")
		c.w.WriteString(name)
		c.w.WriteByte(' ')
		c.w.Write(strconv.AppendInt(c.num[:0], v, 10))
		c.w.WriteString("\r\n")
	}
	st("pid", int64(os.Getpid()))
	st("uptime", int64(time.Since(s.started)/time.Second))
	st("time", time.Now().Unix())
	c.w.WriteString("STAT version " + s.opts.Version + "\r\n")
	st("curr_connections", s.currConns.Load())
	st("total_connections", int64(s.totConns.Load()))
	st("cmd_get", int64(s.cmdGet.Load()))
	st("get_hits", int64(s.hits.Load()))
	st("get_misses", int64(s.misses.Load()))
	st("hits", int64(s.hits.Load()))
	st("misses", int64(s.misses.Load()))
	st("tables", int64(ntables))
	st("tables_generation", int64(gen))
	c.w.WriteString("END\r\n")
}

var comma = []byte{','}
