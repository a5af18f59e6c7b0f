package enrichd

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"sync/atomic"
	"time"
)

func init() {
	RegisterOutput(OutputKind{Type: "stdout"})
	RegisterOutput(OutputKind{Type: "file", Endpoint: EndpointPath})
	RegisterOutput(OutputKind{Type: "tcp", Endpoint: EndpointAddress})
}

// outputStats are one output's counters.
type outputStats struct {
	name, typ  string
	bytes      atomic.Uint64
	errors     atomic.Uint64
	reconnects atomic.Uint64
	connected  atomic.Bool
}

// sink is one output. Write, Flush and Reopen are called from the output
// goroutine only.
type sink interface {
	Write(p []byte) error
	Flush() error
	Reopen() error
	Close() error
	Stats() *outputStats
}

func newSink(o OutputConfig, d *Daemon) (sink, error) {
	st := &outputStats{name: o.Name, typ: string(o.Type)}
	switch o.Type {
	case "stdout":
		return &writerSink{w: bufio.NewWriterSize(os.Stdout, o.BufferSize), under: os.Stdout, st: st}, nil
	case "file":
		f := &fileSink{path: o.Path, size: o.BufferSize, st: st}
		if err := f.open(); err != nil {
			return nil, err
		}
		return f, nil
	case "tcp":
		return &tcpSink{addr: o.Address, size: o.BufferSize, st: st, log: d.log, stop: d.hardStop}, nil
	}
	return nil, fmt.Errorf("unknown output type %q", o.Type)
}

// directWrite is the size from which writeThrough writes around the
// buffer.
const directWrite = 32 << 10

// writeThrough writes p to under through w. A large p (a batch's output
// buffer is one) goes to under directly after what w holds, instead of
// being copied into w: one copy fewer, and no write split at w's size.
func writeThrough(w *bufio.Writer, under io.Writer, p []byte) error {
	if len(p) < min(directWrite, w.Size()/2) {
		_, err := w.Write(p)
		return err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	_, err := under.Write(p)
	return err
}

type writerSink struct {
	w     *bufio.Writer
	under io.Writer
	st    *outputStats
}

func (s *writerSink) Write(p []byte) error {
	err := writeThrough(s.w, s.under, p)
	s.count(len(p), err)
	return err
}
func (s *writerSink) count(n int, err error) {
	if err != nil {
		s.st.errors.Add(1)
		return
	}
	s.st.bytes.Add(uint64(n))
}
func (s *writerSink) Flush() error        { return s.w.Flush() }
func (s *writerSink) Reopen() error       { return nil }
func (s *writerSink) Close() error        { return s.w.Flush() }
func (s *writerSink) Stats() *outputStats { return s.st }

// preallocStep is how much disk a file output reserves past its end at a
// time.
const preallocStep = 16 << 20

// fileSink appends to a file, reopened on SIGHUP so that log rotation
// (rename, then HUP) starts a new file.
//
// Where the file system allows, it reserves disk past the end of the file
// ahead of its writes, preallocStep at a time, without changing the file's
// size; closing or reopening gives back what was not used. After a crash,
// at most preallocStep of reserved blocks stay with the file (the file's
// content and size are not affected) until it is truncated or removed.
type fileSink struct {
	path string
	size int
	f    *os.File
	w    *bufio.Writer
	st   *outputStats
	// ahead is how much of the reservation past the end is left; noAlloc
	// is set where reserving is not supported, reserved once it was done.
	ahead             int64
	noAlloc, reserved bool
}

func (s *fileSink) open() error {
	f, err := os.OpenFile(s.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	s.f = f
	s.ahead, s.reserved = 0, false
	if s.w == nil {
		s.w = bufio.NewWriterSize(f, s.size)
	} else {
		s.w.Reset(f)
	}
	return nil
}

func (s *fileSink) Write(p []byte) error {
	if !s.noAlloc && int64(len(p)) > s.ahead {
		s.reserve(int64(len(p)))
	}
	err := writeThrough(s.w, s.f, p)
	if err != nil {
		s.st.errors.Add(1)
		return err
	}
	s.ahead -= int64(len(p))
	s.st.bytes.Add(uint64(len(p)))
	return nil
}

// reserve reserves at least n bytes past the end of the file (as the
// file's size says: someone may have truncated it).
func (s *fileSink) reserve(n int64) {
	fi, err := s.f.Stat()
	if err != nil {
		return
	}
	if !fi.Mode().IsRegular() {
		s.noAlloc = true // a device or a pipe: nothing to reserve
		return
	}
	n = max(n, preallocStep)
	switch err := preallocate(s.f, fi.Size()+int64(s.w.Buffered()), n); {
	case errors.Is(err, errors.ErrUnsupported):
		s.noAlloc = true
	case err != nil:
		// Out of space, most likely: the write will say so. Try again
		// after as many bytes as a reservation would have held.
		s.ahead = n
	default:
		s.ahead, s.reserved = n, true
	}
}

// release gives back f's reservation past its end, if it has one:
// truncating to the current size frees the blocks beyond it. (The output is
// the file's only writer.)
func release(f *os.File, reserved bool) error {
	if !reserved {
		return nil
	}
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	return f.Truncate(fi.Size())
}

func (s *fileSink) Flush() error {
	err := s.w.Flush()
	if err != nil {
		s.st.errors.Add(1)
	}
	return err
}
func (s *fileSink) Reopen() error {
	s.Flush()
	old, reserved := s.f, s.reserved
	if err := s.open(); err != nil {
		s.st.errors.Add(1)
		return err // keep writing to the old file
	}
	// The new file is in use: failing to give back the old one's
	// reservation (at most preallocStep) is no reopen failure.
	_ = release(old, reserved)
	return old.Close()
}
func (s *fileSink) Close() error {
	return errors.Join(s.w.Flush(), release(s.f, s.reserved), s.f.Close())
}
func (s *fileSink) Stats() *outputStats { return s.st }

// tcpSink writes to a TCP peer, reconnecting with exponential backoff.
// While the peer is away, the output goroutine waits (the bounded queues
// then slow the TCP inputs down); data in a failed write is resent after
// reconnecting, so delivery is at least once.
type tcpSink struct {
	addr string
	size int
	c    net.Conn
	w    *bufio.Writer
	st   *outputStats
	log  *slog.Logger
	stop <-chan struct{}
}

func (s *tcpSink) connect() error {
	backoff := 100 * time.Millisecond
	for {
		c, err := net.DialTimeout("tcp", s.addr, 5*time.Second)
		if err == nil {
			s.c = c
			if s.w == nil {
				s.w = bufio.NewWriterSize(c, s.size)
			} else {
				s.w.Reset(c)
			}
			s.st.connected.Store(true)
			return nil
		}
		s.st.errors.Add(1)
		s.log.Warn("output connect failed", "output", s.st.name, "err", err, "retry_in", backoff)
		select {
		case <-s.stop:
			return fmt.Errorf("output %s: giving up: %w", s.st.name, err)
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 10*time.Second)
	}
}

func (s *tcpSink) drop() {
	if s.c != nil {
		s.c.Close()
		s.c = nil
	}
	s.st.connected.Store(false)
}

func (s *tcpSink) Write(p []byte) error {
	if s.c != nil && s.w.Buffered() == 0 && peerClosed(s.c) {
		s.fail(errors.New("peer closed the connection"))
	}
	for {
		if s.c == nil {
			if err := s.connect(); err != nil {
				return err
			}
			s.st.reconnects.Add(1)
		}
		// A failure resends all of p on a new connection.
		if err := writeThrough(s.w, s.c, p); err != nil {
			s.fail(err)
			continue
		}
		s.st.bytes.Add(uint64(len(p)))
		return nil
	}
}

func (s *tcpSink) fail(err error) {
	s.st.errors.Add(1)
	s.log.Warn("output write failed, reconnecting", "output", s.st.name, "err", err)
	s.drop()
}

func (s *tcpSink) Flush() error {
	if s.c == nil {
		return nil
	}
	if err := s.w.Flush(); err != nil {
		s.fail(err)
		return err
	}
	return nil
}
func (s *tcpSink) Reopen() error { return nil }
func (s *tcpSink) Close() error {
	if s.c == nil {
		return nil
	}
	err := s.w.Flush()
	s.drop()
	return err
}
func (s *tcpSink) Stats() *outputStats { return s.st }
