package engine

import "time"

// processChunkSafe is processChunk for a worker with a table set: a
// memory fault in a table's mapping (its file truncated or rewritten in
// place) is recovered, the table's version marked damaged by the set,
// and the chunk processed again from its start, the damaged table then
// absent. What the faulted attempt wrote and counted is undone first, so
// that every event is written and counted once. A panic that is not a
// fault in a table is not recovered.
func (w *Worker) processChunkSafe(b *Batch, msgs []Msg, out []byte, now time.Time) []byte {
	m := w.mark(b, out)
	for attempt := 0; ; attempt++ {
		// Each fault damages one version, which the next attempt no
		// longer sees; past one attempt per rule, the chunk is done
		// without any table (which cannot fault).
		w.noTables = attempt > len(w.p.rules)
		res, ok := w.tryChunk(b, msgs, out, now)
		w.noTables = false
		if ok {
			return res
		}
		out = w.undo(b, out, m)
	}
}

// tryChunk runs processChunk; ok is false when it faulted in a table.
func (w *Worker) tryChunk(b *Batch, msgs []Msg, out []byte, now time.Time) (res []byte, ok bool) {
	defer func() {
		if ok {
			return
		}
		r := recover()
		if _, fault := w.p.set.Fault(r); !fault {
			panic(r)
		}
	}()
	return w.processChunk(b, msgs, out, now), true
}

// chunkMark is what a chunk's attempt appends to, to undo it.
type chunkMark struct {
	out, ends, vals, spans int
	malformed, truncated   uint64
}

func (w *Worker) mark(b *Batch, out []byte) chunkMark {
	m := chunkMark{out: len(out), malformed: b.Malformed, truncated: b.Truncated}
	if ob := w.ob; ob != nil {
		m.ends, m.vals, m.spans = len(ob.ends), len(ob.vals), len(ob.spans)
	}
	return m
}

// undo forgets what a faulted attempt wrote and counted, releases its
// snapshot and clears the caches of values that alias mappings.
func (w *Worker) undo(b *Batch, out []byte, m chunkMark) []byte {
	w.releaseSnap()
	b.Malformed, b.Truncated = m.malformed, m.truncated
	if ob := w.ob; ob != nil {
		ob.ends, ob.vals, ob.spans = ob.ends[:m.ends], ob.vals[:m.vals], ob.spans[:m.spans]
	}
	for i := range w.rw {
		rw := &w.rw[i]
		rw.nHits, rw.nMisses, rw.nNoTable, rw.nBadKey = 0, 0, 0, 0
		rw.colFor = nil
		if rw.nf > 0 && rw.cache.slots != nil {
			rw.cache.reset(rw.nf, w.snapGen)
			rw.recs.Reset()
		}
	}
	w.scratch = w.scratch[:0]
	return out[:m.out]
}
