package enrichd

import (
	"bufio"
	"io"
	"log/slog"
	"sync/atomic"
)

// Output is a destination of enriched events: one type of output is one
// file that implements it and registers itself (RegisterOutput). The
// daemon's output goroutine calls Write with every buffer the workers
// fill, Flush when it has no more waiting, and Close once at the end.
//
// An output reports each buffer it has delivered (written and flushed, or
// acknowledged by a broker) by calling Done on the buffer's Delivery, and
// never for one it failed to deliver: that is what lets an input commit
// what it read (a Kafka input's offsets). Most outputs write a byte
// stream and are made with newStreamOutput, which does this for them. An
// output that sends a buffer later, from goroutines of its own, calls
// Retain on it in Write and Release once done with it.
type Output interface {
	// Write takes one buffer of lines.
	Write(b *Buffer) error
	// Flush pushes out what Write has buffered.
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
	Errors     atomic.Uint64
}

// stream is an output that writes bytes: stdout, a file, a TCP peer.
// Write, Flush and Reopen are called from the output goroutine only.
type stream interface {
	Write(p []byte) error
	Flush() error
	Close() error
}

// streamOutput makes a stream an Output: a buffer is delivered once the
// stream has written it and flushed it without error.
type streamOutput struct {
	stream
	st  *OutputStats
	log *slog.Logger
	// pending are the deliveries of the buffers written since the last
	// flush; failed is set when one of them failed to be written.
	pending []Delivery
	failed  int
}

func newStreamOutput(s stream, st *OutputStats, log *slog.Logger) *streamOutput {
	return &streamOutput{stream: s, st: st, log: log}
}

func (o *streamOutput) Write(b *Buffer) error {
	if err := o.stream.Write(b.B); err != nil {
		if b.ack != nil {
			o.failed++
		}
		return err
	}
	if b.ack != nil {
		o.pending = append(o.pending, b.Delivery())
	}
	return nil
}

// Flush flushes the stream and reports the buffers written since the last
// flush as delivered, unless the flush failed. A buffer the stream failed
// to write or flush is never reported: its input never commits it (a
// Kafka input's group reads it again after a restart).
func (o *streamOutput) Flush() error {
	err := o.stream.Flush()
	if err != nil {
		o.failed += len(o.pending)
	} else {
		for _, d := range o.pending {
			d.Done()
		}
	}
	if o.failed > 0 {
		o.log.Error("an output failed: the input offsets of these events will not be committed", "batches", o.failed)
	}
	clear(o.pending)
	o.pending, o.failed = o.pending[:0], 0
	return err
}

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
