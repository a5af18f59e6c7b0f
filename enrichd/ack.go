package enrichd

import (
	"sync"
	"sync/atomic"
)

// Acker is told when a batch it acknowledged has been delivered.
type Acker interface {
	// Delivered is called once, after every output has delivered the
	// batch's events; it is never called for a batch an output failed to
	// deliver.
	Delivered()
}

// Ack is the acknowledgement a batch carries from its input through the
// workers to the outputs. An input that needs to know when its events are
// delivered (a Kafka input, to commit their offsets) attaches one to each
// of its batches (Batcher.SetAck); each output reports its delivery of the
// batch's buffer (Buffer.Delivery), and the last one tells the input's
// Acker. A type that embeds an Ack sets it up with Init.
//
// With the persistent queue on (queue.go), the input's Acker is told
// Delivered once the batch's events are appended to the queue as durably
// as queue.sync says; the outputs' deliveries are then of the queue's
// records, each with an Ack of its own (recordAck).
type Ack struct {
	pending atomic.Int32 // 1 until the batch's buffer is delivered
	to      Acker
	// deferred: the batch's events count as delivered only when the
	// input says so (Env.CountDelivered); events is then their number,
	// set before to is told.
	deferred bool
	events   uint64
}

// NewAck returns an acknowledgement that tells to.
func NewAck(to Acker) *Ack { return &Ack{to: to} }

// Init sets up an Ack embedded in to's own type.
func (a *Ack) Init(to Acker) { a.to, a.deferred = to, false }

// InitDeferred sets up an Ack embedded in to's own type whose batch's
// events do not count in events_out, nor in the outputs' delivered
// events, when the outputs deliver them: the input counts them later
// with Env.CountDelivered, if ever. An exactly-once input counts a
// transaction's events when it commits, so that the counts are what a
// read_committed reader of the output holds; an aborted transaction's
// events are not counted (they are read, produced and counted again).
// Events says how many events the batch delivered.
func (a *Ack) InitDeferred(to Acker) { a.to, a.deferred = to, true }

// Events returns the number of events the outputs delivered of a
// deferred Ack's batch, once its Acker was told Delivered.
func (a *Ack) Events() uint64 { return a.events }

// release records the delivery of the batch's buffer.
func (a *Ack) release() {
	if a.pending.Add(-1) == 0 {
		a.to.Delivered()
	}
}

// tracker follows one buffer until every output has delivered it: then
// its events count in events_out (and its input's Ack is told). One per
// buffer handed to the outputs, from a pool: an atomic add per output and
// buffer, nothing per event.
type tracker struct {
	pending atomic.Int32 // outputs that have not delivered the buffer yet
	events  uint64
	ack     *Ack
	in      *InputStats    // the input the events came from, or nil
	out     *atomic.Uint64 // the daemon's events_out
}

var trackers = sync.Pool{New: func() any { return new(tracker) }}

// track returns the tracker of a buffer of events, with ack, read by
// input in (or nil), that outputs outputs will deliver, counted in out
// once they all have.
func track(outputs int, events int, ack *Ack, in *InputStats, out *atomic.Uint64) *tracker {
	t := trackers.Get().(*tracker)
	t.events, t.ack, t.in, t.out = uint64(events), ack, in, out
	if ack != nil {
		ack.pending.Store(1)
	}
	t.pending.Store(int32(outputs))
	if outputs == 0 {
		t.delivered()
		return nil
	}
	return t
}

func (t *tracker) delivered() {
	if t.ack == nil || !t.ack.deferred {
		t.out.Add(t.events)
	}
	if t.ack != nil {
		t.ack.events = t.events
		t.ack.release()
	}
	t.in.delivered()
	t.ack, t.in, t.out = nil, nil, nil
	trackers.Put(t)
}

// Delivery is one output's duty to report that it delivered a buffer. It
// stays valid after the buffer has gone back to its pool, so that an
// output that writes a buffer now and flushes it later can report then.
// Each Delivery is reported once.
type Delivery struct {
	t  *tracker
	st *OutputStats
}

// Done reports the delivery: the buffer's events count in the output's
// delivered events, and in events_out once every output has delivered
// them.
func (d Delivery) Done() {
	if d.t == nil {
		return
	}
	if d.st != nil && (d.t.ack == nil || !d.t.ack.deferred) {
		d.st.Delivered.Add(d.t.events)
	}
	if d.t.pending.Add(-1) == 0 {
		d.t.delivered()
	}
}

// Failer is an Acker that is told when an output gives up on a batch for
// good (Delivery.Fail): an input that delivers exactly once (a Kafka
// transaction) then aborts what the batch belongs to, instead of waiting
// for a delivery that never comes.
type Failer interface {
	Failed(err error)
}

// Fail reports that the output will never deliver the buffer: the
// buffer's events never count as delivered, and its input's Acker, if it
// is a Failer, is told.
func (d Delivery) Fail(err error) {
	if d.t == nil || d.t.ack == nil {
		return
	}
	if f, ok := d.t.ack.to.(Failer); ok {
		f.Failed(err)
	}
}
