package engine

import (
	"net/netip"
	"runtime/debug"
	"time"
	"unsafe"

	"github.com/lutkit/lutkit/enrichd/parse"
	"github.com/lutkit/lutkit/internal/prefetch"
	"github.com/lutkit/lutkit/reader"
	"github.com/lutkit/lutkit/reader/mmdb"
	"github.com/lutkit/lutkit/tables"
)

// evState is one event of the batch being processed.
type evState struct {
	ev     parse.Event
	line   []byte
	body   []byte // where key=value and JSON fields are read
	kind   Format // Syslog, JSON, Raw (a failed JSON line becomes Raw)
	tags   uint8  // system tags
	misses uint64 // rule i missed (bit i)
	skips  uint64 // rule i's When did not hold (bit i, set in misses too)
}

// Worker processes batches for an Engine; one per goroutine. It holds
// the scratch memory of a batch, so that processing allocates nothing in
// the steady state.
type Worker struct {
	p       *Engine
	evs     []evState
	kvVals  [][]byte
	rw      []ruleWork
	scratch []byte
	tmp     []byte
	now     time.Time
	frames  []frame // the objects encode has open
	snapGen uint64
	ob      *Lines // the buffer being filled, when Engine.perEvent
	client  []byte // the batch's Client
	// hitBits are, per rule, the leaves a hit writes whatever the event
	// (see setHitBits); fusedProgs the fused programs met so far.
	hitBits    []uint64
	fusedProgs fusedCache
	// snap is the snapshot the chunk being processed holds (nil between
	// chunks); noTables processes a chunk without any table (fault.go).
	snap     *tables.Snapshot
	noTables bool
	// times are the events' times (Unix nanoseconds) for each of the
	// engine's time sources, timeSt what was found (event_time.go).
	times  []int64
	timeSt []parse.TimeStatus
}

// NewWorker returns a worker that processes batchSize events at a time
// (a larger batch is processed in parts).
func (p *Engine) NewWorker(batchSize int) *Worker {
	w := &Worker{p: p, evs: make([]evState, batchSize), kvVals: make([][]byte, batchSize*max(1, len(p.kvKeys)))}
	w.rw = make([]ruleWork, len(p.rules))
	for i, r := range p.rules {
		rw := &w.rw[i]
		rw.keys = make([][]byte, batchSize)
		rw.views = make([]reader.View, batchSize)
		rw.hit = make([]bool, batchSize)
		if r.mmFields != nil {
			rw.mmVals = make([]mmdb.Value, batchSize*r.mmFields.Len())
			rw.batchVals = make([]mmdb.Value, batchSize*r.mmFields.Len())
			rw.addrs = make([]netip.Addr, 0, batchSize)
			rw.idx = make([]int32, 0, batchSize)
			rw.matches = make([]mmdb.Match, batchSize)
			rw.nf = r.mmFields.Len()
		}
		rw.colIdx = make([]int, len(r.cfg.Columns))
		rw.chainIdx = make([]int, len(r.chainCols))
		if r.cfg.MaxMatches > 1 {
			rw.multi = make([]reader.View, r.cfg.MaxMatches)
		}
		if r.each != nil {
			rw.eachSpan = make([][2]int32, batchSize)
			if rw.nf == 0 && r.mmFields != nil {
				rw.nf = r.mmFields.Len()
			}
		}
	}
	if len(p.timeSrcs) > 0 {
		w.times = make([]int64, batchSize*len(p.timeSrcs))
		w.timeSt = make([]parse.TimeStatus, batchSize*len(p.timeSrcs))
	}
	w.scratch = make([]byte, 0, 64<<10)
	w.frames = make([]frame, p.depth)
	w.hitBits = make([]uint64, len(p.rules))
	return w
}

// Process enriches the batch and appends one JSON line per message to
// l (recording where each line ends, and its event fields, when the
// engine's options ask for them); now is the time of events without a
// timestamp. It takes one snapshot of the table set for the whole batch,
// consumes the batch's messages (Msgs is empty after) and sets its
// Malformed and Truncated counts.
//
// A table file truncated or rewritten in place under its mapping faults
// when a lookup reads it: Process catches the fault, the table's version
// is marked damaged (tables.Set.Fault) and the events of the part of the
// batch being processed are processed again without it, their lookups in
// it missing as in a table that is not loaded. No event is lost.
func (w *Worker) Process(b *Batch, l *Lines, now time.Time) {
	if w.p.perEvent {
		l.nf = len(w.p.outFields)
		w.ob = l
	}
	l.B = w.process(b, l.B, now)
	w.ob = nil
}

// process is Process into a plain buffer: it appends to out and returns
// it.
func (w *Worker) process(b *Batch, out []byte, now time.Time) []byte {
	b.Malformed, b.Truncated = 0, 0
	if w.p.set != nil {
		// A fault reading a mapping is then a panic that
		// processChunkSafe recovers, not the death of the process.
		defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	}
	for len(b.Msgs) > 0 {
		n := min(len(b.Msgs), len(w.evs))
		if w.p.set != nil {
			out = w.processChunkSafe(b, b.Msgs[:n], out, now)
		} else {
			out = w.processChunk(b, b.Msgs[:n], out, now)
		}
		b.Msgs = b.Msgs[n:]
	}
	return out
}

func (w *Worker) processChunk(b *Batch, msgs []Msg, out []byte, now time.Time) []byte {
	p := w.p
	w.now = now
	w.client = b.Client
	n := len(msgs)
	evs := w.evs[:n]
	var malformed, truncated uint64
	needKV := len(p.kvKeys) > 0
	nkv := len(p.kvKeys)
	// 1. Parse every event and extract its key=value pairs.
	for i, m := range msgs {
		e := &evs[i]
		e.line = b.Buf[m.off : m.off+m.n : m.off+m.n]
		e.kind = b.Format
		e.tags = 0
		e.misses, e.skips = 0, 0
		if m.flags&FlagTruncated != 0 {
			e.tags |= tagTruncated
			truncated++
		}
		switch b.Format {
		case Syslog:
			err := parse.ParseSyslog(e.line, &e.ev)
			e.body = e.ev.Message
			if err != nil || e.ev.Malformed {
				e.tags |= tagMalformed
				malformed++
			}
		case JSON:
			e.ev.Reset()
			e.body = e.line
			if !validJSONObject(e.line) {
				e.kind = Raw
				e.tags |= tagJSONFailure
				malformed++
			}
		default:
			e.ev.Reset()
			e.body = e.line
		}
		if needKV {
			vals := w.kvVals[i*nkv : (i+1)*nkv]
			if e.kind == JSON {
				clear(vals)
			} else {
				p.extractor.Extract(e.body, vals)
			}
		}
	}
	b.Malformed += malformed
	b.Truncated += truncated
	// 2. One snapshot of the table set for the whole batch; each rule is a
	// batch lookup.
	var snap *tables.Snapshot
	if p.set != nil && !w.noTables {
		snap = p.set.Acquire()
		w.snap = snap
		w.snapGen = snap.Generation()
	}
	w.scratch = w.scratch[:0]
	if len(p.timeSrcs) > 0 {
		w.readTimes(evs, now)
	}
	for ri, r := range p.rules {
		w.runRule(ri, r, snap, evs)
	}
	if p.fused.ok {
		w.setHitBits()
	}
	// 3. Encode. The rows found are fetched rowsAhead events ahead of
	// their encoding, so that their cache misses overlap instead of
	// stalling the encoder row by row (and not before the other rules'
	// lookups, or all at once, which would evict them again).
	for i := range evs {
		if i%rowsAhead == 0 {
			from := i + rowsAhead
			if i == 0 {
				from = 0
			}
			w.touchRows(from, min(i+2*rowsAhead, n))
		}
		out = w.encode(i, &evs[i], out)
		if ob := w.ob; ob != nil {
			ob.ends = append(ob.ends, int32(len(out)))
			for f := range p.outFields {
				ob.vals = append(ob.vals, w.fieldValue(i, &evs[i], &p.outFields[f])...)
				ob.spans = append(ob.spans, int32(len(ob.vals)))
			}
		}
	}
	w.releaseSnap()
	w.flushStats()
	return out
}

// releaseSnap releases the chunk's snapshot and forgets its tables.
func (w *Worker) releaseSnap() {
	if w.snap == nil {
		return
	}
	for i := range w.rw {
		w.rw[i].lut, w.rw[i].mm = nil, nil
	}
	w.snap.Release()
	w.snap = nil
}

// rowsAhead is how many events ahead of the encoder rows are fetched. Far
// enough for a row to arrive (an event takes longer to encode than a
// memory read), near enough that the output written meanwhile does not
// evict it again: in perf profiles of the peer benchmark's load, 4 spent
// the least in reading rows and prefetching them of 2, 4, 8, 16 and 48.
const rowsAhead = 4

// touchRows starts fetching the rows found for events from to to, and the
// bytes of the strings their MMDB fields hold.
func (w *Worker) touchRows(from, to int) {
	if from >= to {
		return
	}
	for ri := range w.rw {
		rw := &w.rw[ri]
		switch {
		case rw.eachSpan != nil:
			// written already
		case rw.lut != nil:
			reader.TouchRows(rw.views[from:to])
		case rw.mm != nil:
			var pf prefetch.Batch
			for e := from; e < to; e++ {
				if !rw.hit[e] {
					continue // its values may be a previous batch's
				}
				for _, v := range rw.mmVals[e*rw.nf : (e+1)*rw.nf] {
					if b := v.Bytes(); len(b) > 0 {
						pf.Add(uintptr(unsafe.Pointer(unsafe.SliceData(b))))
					}
				}
			}
			pf.Flush()
		}
	}
}
