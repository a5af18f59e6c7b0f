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
	in    *inputStats
	start time.Time // when the first message was added
	ack   *ackEntry // the input's acknowledgement (Kafka), or nil
}

func (b *batch) reset() {
	b.Batch.Reset()
	b.in = nil
	b.ack = nil
}

// outBuf is a buffer of enriched JSON lines on its way to the outputs.
type outBuf struct {
	engine.Lines
	events int
	// ack is the input's acknowledgement of the batch (Kafka inputs), done
	// when every output has taken the events.
	ack *ackEntry
	// refs counts the holders of the buffer: the output loop and each
	// output that keeps it after Send (Kafka). The last one returns it to
	// the pool.
	refs atomic.Int32
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
