package enrichd

import (
	"bytes"
	"errors"
	"log/slog"
	"net"
	"os"
	"sync/atomic"
	"syscall"
)

// Output is a destination of enriched events: one type of output is one
// file that implements it and registers itself (RegisterOutput). The
// daemon's output goroutine calls Write with every buffer the workers
// fill, Flush when it has no more waiting, and Close once at the end.
//
// The contract every output keeps:
//
//   - Write(b) takes the buffer: written to the output's stream or put on
//     its own queue. An output that sends b later, from goroutines of its
//     own, calls b.Retain in Write and b.Release once done with it; one
//     that keeps only b's bytes copies them.
//   - Once b's lines are really delivered (written and flushed without
//     error, or acknowledged by a broker), the output calls Done on
//     b.Delivery(its OutputStats), once. It never does for lines it has
//     not delivered: that is what lets an input commit what it read (a
//     Kafka input's offsets), and what events_out counts (the events every
//     output reported delivered).
//   - An error from Write or Flush means "not delivered (yet)": the output
//     keeps what it took but could not deliver, and delivers it on a later
//     Flush. It must not lose it on the error (a bufio.Writer's error is
//     permanent: the stream outputs keep their own buffer, lineBuf).
//   - On an error the daemon logs it (rate-limited, with its reason),
//     counts it by output and reason (enrichd_output_errors_total), and
//     calls Flush again after a backoff, until it returns nil, without
//     giving the outputs any new buffer meanwhile: the bounded queues
//     fill, TCP senders wait, UDP drops are counted. It gives up only when
//     the daemon does (Env.Stop, after shutdown_timeout).
//
// Most outputs write a byte stream and are made with newStreamOutput,
// which keeps this contract for them.
type Output interface {
	// Write takes one buffer of lines.
	Write(b *Buffer) error
	// Flush pushes out what Write has buffered, and what an earlier
	// Write or Flush failed to deliver.
	Flush() error
	// Close flushes, waits for what is in flight and releases the output.
	Close() error
	// Stats returns the output's counters.
	Stats() *OutputStats
}

// reopener is implemented by outputs that reopen their file on SIGHUP.
type reopener interface {
	Reopen() error
}

// holder is implemented by outputs that keep buffers after Write: Holds
// is how many at most, so that the daemon's pool has them to spare.
type holder interface {
	Holds() int
}

// OutputStats are the counters every output keeps.
type OutputStats struct {
	Name, Type string
	Bytes      atomic.Uint64
	// Delivered is the events the output reported delivered (counted by
	// Delivery.Done).
	Delivered atomic.Uint64
	// Errors is the errors an output counts itself, beyond those its
	// Write and Flush return (the daemon counts those by reason).
	Errors atomic.Uint64
	// failures are the errors Write and Flush returned, by reason.
	failures [len(errorReasons)]atomic.Uint64
}

// errorReasons are the reasons of enrichd_output_errors_total. "other"
// also counts OutputStats.Errors.
var errorReasons = [...]string{"enospc", "edquot", "eio", "erofs", "peer_closed", "connect", "timeout", "other"}

const reasonOther = len(errorReasons) - 1

// errConnect marks an error as the failure to connect to the peer.
type errConnect struct{ err error }

func (e errConnect) Error() string { return "connect: " + e.err.Error() }
func (e errConnect) Unwrap() error { return e.err }

// errPeerClosed is the TCP output's peer closing the connection.
var errPeerClosed = errors.New("peer closed the connection")

// errorReason returns the index in errorReasons of err's reason.
func errorReason(err error) int {
	var ce errConnect
	var ne net.Error
	switch {
	case errors.As(err, &ce):
		return 5
	case errors.Is(err, syscall.ENOSPC):
		return 0
	case errors.Is(err, syscall.EDQUOT):
		return 1
	case errors.Is(err, syscall.EIO):
		return 2
	case errors.Is(err, syscall.EROFS):
		return 3
	case errors.Is(err, errPeerClosed), errors.Is(err, syscall.EPIPE), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.ECONNABORTED), errors.Is(err, net.ErrClosed):
		return 4
	case errors.Is(err, os.ErrDeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return 6
	}
	return reasonOther
}

// failed counts one error of Write or Flush and returns its reason.
func (st *OutputStats) failed(err error) string {
	r := errorReason(err)
	st.failures[r].Add(1)
	return errorReasons[r]
}

// stream is an output that writes bytes: stdout, a file, a TCP peer.
// Write, Flush and Reopen are called from the output goroutine only. Write
// is given the number of lines of p. A stream keeps what it failed to
// write and writes it on its next Flush (see lineBuf); a Flush that
// returns nil has written everything it was given.
type stream interface {
	Write(p []byte, lines int) error
	Flush() error
	Close() error
}

// streamOutput makes a stream an Output: a buffer is delivered once the
// stream has written it and a Flush has returned nil.
type streamOutput struct {
	stream
	st  *OutputStats
	log *slog.Logger
	// pending are the deliveries of the buffers written since the last
	// flush that succeeded.
	pending []Delivery
}

func newStreamOutput(s stream, st *OutputStats, log *slog.Logger) *streamOutput {
	return &streamOutput{stream: s, st: st, log: log}
}

// Write writes b to the stream. The stream keeps what it fails to write,
// so that b is delivered by a later Flush whether Write fails or not.
func (o *streamOutput) Write(b *Buffer) error {
	o.pending = append(o.pending, b.Delivery(o.st))
	return o.stream.Write(b.B, b.Events)
}

// Flush flushes the stream and, if that succeeded, reports the buffers
// written since the last flush as delivered. After a failure they stay
// pending until a Flush succeeds.
func (o *streamOutput) Flush() error {
	if err := o.stream.Flush(); err != nil {
		return err
	}
	for _, d := range o.pending {
		d.Done()
	}
	clear(o.pending)
	o.pending = o.pending[:0]
	return nil
}

// Close flushes (reporting what it delivers) and closes the stream.
func (o *streamOutput) Close() error { return errors.Join(o.Flush(), o.stream.Close()) }

func (o *streamOutput) Stats() *OutputStats { return o.st }

// Reopen reopens the stream's file, if it has one.
func (o *streamOutput) Reopen() error {
	if r, ok := o.stream.(reopener); ok {
		return r.Reopen()
	}
	return nil
}

// Collect exports the stream's own metrics, if it has any.
func (o *streamOutput) Collect(m MetricSink) {
	if c, ok := o.stream.(MetricsCollector); ok {
		c.Collect(m)
	}
}

// directWrite is the size from which lineBuf writes around its buffer.
const directWrite = 32 << 10

// sendFunc writes p to a stream's destination. On an error it returns how
// many bytes of p are written for good, whole lines only (the stream cuts
// back or gives up a torn last line, which is written again).
type sendFunc func(p []byte) (int, error)

// lineBuf is a stream's write buffer. Unlike a bufio.Writer it survives a
// failed write: what was not written stays in it, from the start of the
// first line not wholly written, and the next flush writes it.
type lineBuf struct {
	b    []byte
	size int
}

func newLineBuf(size int) lineBuf { return lineBuf{b: make([]byte, 0, size), size: size} }

// write writes p through the buffer. A large p (a batch's output buffer
// is one) is sent directly after what the buffer holds, instead of being
// copied: one copy fewer, and no write split at the buffer's size. On an
// error, what of p was not sent is kept (copied): a failure costs a copy,
// a success none.
func (l *lineBuf) write(p []byte, send sendFunc) error {
	if len(p) < min(directWrite, l.size/2) {
		if len(l.b)+len(p) > l.size {
			if err := l.flush(send); err != nil {
				l.b = append(l.b, p...)
				return err
			}
		}
		l.b = append(l.b, p...)
		return nil
	}
	if err := l.flush(send); err != nil {
		l.b = append(l.b, p...)
		return err
	}
	n, err := send(p)
	if err != nil {
		l.b = append(l.b, p[n:]...)
	}
	return err
}

// flush sends what the buffer holds; what was not sent stays.
func (l *lineBuf) flush(send sendFunc) error {
	if len(l.b) == 0 {
		return nil
	}
	n, err := send(l.b)
	l.b = l.b[:copy(l.b, l.b[n:])]
	return err
}

// buffered is how many bytes wait in the buffer.
func (l *lineBuf) buffered() int { return len(l.b) }

// wholeLines returns how many bytes of p[:n] end at a line's end.
func wholeLines(p []byte, n int) int { return bytes.LastIndexByte(p[:n], '\n') + 1 }
