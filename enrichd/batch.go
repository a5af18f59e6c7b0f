package enrichd

import (
	"sync/atomic"
	"time"

	"github.com/lutkit/lutkit/enrichd/engine"
)

// batch is a set of raw messages from one input on its way to a worker:
// the engine's batch, and what the daemon knows of it.
type batch struct {
	engine.Batch
	in    *InputStats
	start time.Time // when the first message was added
	ack   *Ack      // the input's acknowledgement, or nil
}

func (b *batch) reset() {
	b.Reset() // engine.Batch.Reset: the messages
	b.in = nil
	b.ack = nil
}

// batchQueue is the fixed pool of batches and the queue to the workers.
// Inputs take empty batches from free and send full ones on work; both
// are bounded, so memory is.
type batchQueue struct {
	free, work chan *batch
	// A batch is sent when it holds size messages or bytes bytes.
	size, bytes int
	// flushEvery is how long a partial batch may wait for more.
	flushEvery time.Duration
}

func newBatchQueue(n, size, bytes, maxMsg int, flushEvery time.Duration) *batchQueue {
	q := &batchQueue{free: make(chan *batch, n), work: make(chan *batch, n), size: size, bytes: bytes, flushEvery: flushEvery}
	for range n {
		b := &batch{}
		b.Buf, b.Msgs = make([]byte, 0, bytes+maxMsg), make([]engine.Msg, 0, size)
		q.free <- b
	}
	return q
}

// recycle returns a processed batch to the pool.
func (q *batchQueue) recycle(b *batch) {
	b.reset()
	q.free <- b
}

// Buffer is a buffer of enriched JSON lines, one per event, on its way to
// the outputs: what a worker made of one input batch.
type Buffer struct {
	engine.Lines
	Events int // the number of lines
	ack    *Ack
	in     *InputStats // the input of the batch, or nil (the queue's records)
	t      *tracker    // set by the output loop
	// received is when the first event of its input batch was received.
	received time.Time
	// refs counts the holders of the buffer: the output loop while it
	// hands it to the outputs, and each output that keeps it (Retain).
	// The last one returns it to the pool.
	refs atomic.Int32
	pool chan<- *Buffer
}

// Delivery returns what the output whose counters are st must call Done
// on once it has delivered the buffer's lines: written and flushed,
// acknowledged by the brokers (see Output). An output that has not
// delivered them never calls it.
func (b *Buffer) Delivery(st *OutputStats) Delivery { return Delivery{b.t, st} }

// Retain keeps the buffer for an output after its Write returns (to send
// it later); the output calls Release when it is done with it.
func (b *Buffer) Retain() { b.refs.Add(1) }

// Release drops one holder of the buffer; the last one returns it to the
// pool.
func (b *Buffer) Release() {
	if b.refs.Add(-1) > 0 {
		return
	}
	b.Reset() // engine.Lines.Reset
	b.Events = 0
	b.ack, b.t, b.in = nil, nil, nil
	b.pool <- b
}

// code is the engine's format for f.
func (f Format) code() engine.Format {
	switch f {
	case FormatJSON:
		return engine.JSON
	case FormatRaw:
		return engine.Raw
	}
	return engine.Syslog
}
