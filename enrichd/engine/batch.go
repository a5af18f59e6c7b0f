package engine

// Batch is a set of raw messages of one format, in one buffer: what an
// input hands the engine.
type Batch struct {
	Buf    []byte
	Msgs   []Msg
	Format Format
	// Client is the verified TLS client certificate's subject of the
	// connection every message of the batch was read from, or nil: the
	// value of the field tls.client.subject.
	Client []byte
	// Malformed and Truncated count, once the batch is processed, the
	// events that failed to parse (tagged and passed on) and those their
	// input truncated.
	Malformed, Truncated uint64
}

// Msg locates one message in a batch's buffer.
type Msg struct {
	off, n int32
	flags  uint8
}

// Reset empties the batch, keeping its memory.
func (b *Batch) Reset() {
	b.Buf = b.Buf[:0]
	b.Msgs = b.Msgs[:0]
	b.Client = nil
	b.Malformed, b.Truncated = 0, 0
}

// Add copies msg into the batch; flags are FlagTruncated or 0.
func (b *Batch) Add(msg []byte, flags uint8) {
	off := len(b.Buf)
	b.Buf = append(b.Buf, msg...)
	b.Msgs = append(b.Msgs, Msg{off: int32(off), n: int32(len(msg)), flags: flags})
}

// Lines is a buffer of enriched JSON lines, one per event, each ending in
// '\n': what the engine hands the outputs.
type Lines struct {
	B []byte
	// With Options.Split: ends[i] is the end of line i in B (after its
	// '\n'); with Options.EventFields too, the value of event field f for
	// event i is vals[spans[k-1]:spans[k]], k = i*nf+f (spans[-1] = 0).
	ends  []int32
	vals  []byte
	spans []int32
	nf    int
}

// Reset empties the buffer, keeping its memory.
func (l *Lines) Reset() {
	l.B = l.B[:0]
	l.ends = l.ends[:0]
	l.vals = l.vals[:0]
	l.spans = l.spans[:0]
}

// Len returns the number of lines whose ends are recorded (with
// Options.Split).
func (l *Lines) Len() int { return len(l.ends) }

// Field returns event i's value of event field f (see Engine.EventField),
// or nil when the event has none.
func (l *Lines) Field(i, f int) []byte {
	k := i*l.nf + f
	start := int32(0)
	if k > 0 {
		start = l.spans[k-1]
	}
	return l.vals[start:l.spans[k]]
}

// Line returns event i's JSON line, without its '\n' (with
// Options.Split).
func (l *Lines) Line(i int) []byte {
	start := int32(0)
	if i > 0 {
		start = l.ends[i-1]
	}
	return l.B[start : l.ends[i]-1]
}
