package enrichd

import (
	"errors"
	"io"
	"net"
	"sync/atomic"
	"time"

	"github.com/lutkit/lutkit/enrichd/engine"
	"github.com/lutkit/lutkit/enrichd/parse"
)

// Input is a source of events: one type of input is one file that
// implements it and registers itself (RegisterInput). The daemon makes
// each input (InputKind.New) before it runs, or at a configuration reload
// that adds or changes it, starts it once, stops it once on shutdown or at
// the reload that removes or replaces it, then closes it after the outputs
// have delivered what it read; it reads its address and counters at any
// time. Several inputs of one type may run at once: a reload makes the new
// input before it stops the old, when their addresses differ.
//
// An input frames messages and adds them to batches with a Batcher (from
// Env.Batcher), one per goroutine that reads; the batcher sends each batch
// to the workers when it is full, and the input flushes it when its source
// goes quiet for the flush interval (Batcher.Due) and when it stops.
type Input interface {
	// Start starts reading, in goroutines of the input's own.
	Start()
	// Stop makes the input accept nothing new and read what was already
	// sent to it (open connections, socket buffers) until deadline; then
	// it flushes its last batches and closes Done.
	Stop(deadline time.Time)
	// Done is closed once the input has stopped reading and flushed its
	// last batch (after Stop, or by itself for an input that ends).
	Done() <-chan struct{}
	// Close releases what the input holds (listeners, sockets, clients).
	// It is called once, after the outputs have delivered everything read,
	// or when the daemon fails to start.
	Close() error
	// Addr returns the address the input listens on, or nil.
	Addr() net.Addr
	// Stats returns the input's counters.
	Stats() *InputStats
}

// InputStats are the counters every input keeps (Env.InputStats names
// them), exported as metrics (an input with metrics of its own also
// implements MetricsCollector).
type InputStats struct {
	Name, Type string

	Events      atomic.Uint64 // accepted into a batch
	Bytes       atomic.Uint64
	Malformed   atomic.Uint64 // parse errors: tagged and passed on
	Truncated   atomic.Uint64 // oversize messages, truncated and tagged
	Dropped     atomic.Uint64 // dropped because the queue was full (UDP)
	TooLarge    atomic.Uint64 // events larger than a record of the persistent queue, dropped
	FrameErrors atomic.Uint64 // connections ended inside a frame, bad octet counts, read errors

	// inflight is the input's batches sent to the workers and not yet
	// delivered by every output (or appended to the persistent queue):
	// what a reload that removes the input waits for before it closes
	// it (reload_inputs.go).
	inflight atomic.Int64
}

// delivered records the delivery of one of the input's batches; st may be
// nil.
func (st *InputStats) delivered() {
	if st != nil {
		st.inflight.Add(-1)
	}
}

// messageSource yields framed messages (parse.Framer).
type messageSource interface {
	Next() (msg []byte, truncated bool, err error)
	// Cut reports whether the error Next returned cut a message, which
	// was not delivered (an octet-counted frame).
	Cut() bool
}

// newLineSource frames newline-delimited input (files, stdin, and TCP
// inputs of JSON or raw lines, where a leading digit must not switch to
// octet counting). A final line without '\n' is delivered. Its buffer
// grows with the lines, up to max.
func newLineSource(r io.Reader, max int) messageSource {
	return parse.NewLineFramer(r, max)
}

// Batcher accumulates one input goroutine's messages into batches and
// sends them to the workers.
type Batcher struct {
	q    *batchQueue
	in   *InputStats
	fmt  engine.Format
	cur  *batch
	drop bool // never block: drop and count when no batch is free (UDP)
	// client is the verified TLS client of the connection read.
	client []byte
}

// SetClient sets the verified TLS client certificate's subject of the
// connection the batcher's messages come from (tls.client.subject).
func (bt *Batcher) SetClient(subject []byte) { bt.client = subject }

// Add appends msg, sending the batch when it is full.
func (bt *Batcher) Add(msg []byte, truncated bool) {
	if bt.Take() {
		bt.Put(msg, truncated)
	}
}

// Take makes sure a batch is being filled, waiting for a free one. A
// dropping batcher that finds none free drops the message, counts it and
// gets false.
func (bt *Batcher) Take() bool {
	if bt.cur != nil {
		return true
	}
	if bt.drop {
		select {
		case bt.cur = <-bt.q.free:
		default:
			bt.in.Dropped.Add(1)
			return false
		}
	} else {
		bt.cur = <-bt.q.free
	}
	bt.cur.in, bt.cur.Format, bt.cur.start = bt.in, bt.fmt, time.Now()
	bt.cur.Client = bt.client
	return true
}

// Put appends msg to the batch being filled (see Take) and sends the
// batch when it is full, reporting whether it did.
func (bt *Batcher) Put(msg []byte, truncated bool) bool {
	var fl uint8
	if truncated {
		fl = engine.FlagTruncated
	}
	bt.cur.Add(msg, fl)
	if len(bt.cur.Msgs) >= bt.q.size || len(bt.cur.Buf) >= bt.q.bytes {
		bt.Flush()
		return true
	}
	return false
}

// Ack returns the acknowledgement of the batch being filled (see Take),
// or nil.
func (bt *Batcher) Ack() *Ack { return bt.cur.ack }

// SetAck attaches a to the batch being filled (see Take): the input's
// Acker hears when every output has delivered it.
func (bt *Batcher) SetAck(a *Ack) { bt.cur.ack = a }

// Pending reports whether a batch is being filled.
func (bt *Batcher) Pending() bool { return bt.cur != nil }

// Due returns when the pending batch must be flushed even if nothing more
// comes: the flush interval after its first message.
func (bt *Batcher) Due() time.Time { return bt.cur.start.Add(bt.q.flushEvery) }

// FlushInterval is how long a partial batch may wait for more messages.
func (bt *Batcher) FlushInterval() time.Duration { return bt.q.flushEvery }

// Flush sends the current batch to the workers. A blocking batcher waits
// while the queue is full (backpressure); a dropping one drops and counts.
func (bt *Batcher) Flush() {
	b := bt.cur
	if b == nil {
		return
	}
	bt.cur = nil
	n, size := uint64(len(b.Msgs)), uint64(len(b.Buf))
	bt.in.inflight.Add(1)
	if bt.drop {
		select {
		case bt.q.work <- b:
		default:
			bt.in.inflight.Add(-1)
			bt.in.Dropped.Add(n)
			bt.q.recycle(b)
			return
		}
	} else {
		bt.q.work <- b
	}
	bt.in.Events.Add(n)
	bt.in.Bytes.Add(size)
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// stopState is an input's shutdown: whether it is stopping and until when
// it reads what was already sent.
type stopState struct {
	stopping atomic.Bool
	deadline atomic.Int64
}

func (s *stopState) stop(deadline time.Time) {
	s.deadline.Store(deadline.UnixNano())
	s.stopping.Store(true)
}

func (s *stopState) isStopping() bool { return s.stopping.Load() }

func (s *stopState) drainDeadline() time.Time { return time.Unix(0, s.deadline.Load()) }
