package enrichd

import "sync/atomic"

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
// Acker. Inputs that need nothing attach nothing, and the batch's path
// costs nothing more. A type that embeds an Ack sets it up with Init.
type Ack struct {
	pending atomic.Int32 // outputs that have not delivered the batch yet
	to      Acker
}

// NewAck returns an acknowledgement that tells to.
func NewAck(to Acker) *Ack { return &Ack{to: to} }

// Init sets up an Ack embedded in to's own type.
func (a *Ack) Init(to Acker) { a.to = to }

// expect sets how many outputs will deliver the batch.
func (a *Ack) expect(outputs int) {
	a.pending.Store(int32(outputs))
	if outputs == 0 {
		a.to.Delivered()
	}
}

// release records one output's delivery.
func (a *Ack) release() {
	if a.pending.Add(-1) == 0 {
		a.to.Delivered()
	}
}

// Delivery is one output's duty to report that it delivered a buffer. It
// stays valid after the buffer has gone back to its pool, so that an
// output that writes a buffer now and flushes it later can report then.
type Delivery struct{ a *Ack }

// Done reports the delivery.
func (d Delivery) Done() {
	if d.a != nil {
		d.a.release()
	}
}
