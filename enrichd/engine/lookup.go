package engine

import (
	"net/netip"

	"github.com/lutkit/lutkit/format"
	"github.com/lutkit/lutkit/internal/rowjson"
	"github.com/lutkit/lutkit/reader"
	"github.com/lutkit/lutkit/reader/mmdb"
	"github.com/lutkit/lutkit/tables"
)

// ruleWork is a worker's per-rule scratch.
type ruleWork struct {
	keys   [][]byte
	views  []reader.View
	hit    []bool
	mmVals []mmdb.Value
	lut    *reader.Table
	mm     *mmdb.Reader
	colIdx []int
	colFor *reader.Table // table colIdx and row were resolved for
	colGen uint64
	row    rowjson.Encoder // writes a whole row
	// colType is the table's column types, nil when all are text (the
	// common case: one nil check per value written)
	colType []format.ColumnType
	nf      int // mmdb: fields per event in mmVals
	cache   ipCache
	recs    mmdb.RecordCache // mmdb: values of recently decoded records
	// mmdb batch lookups: the addresses the cache did not answer, their
	// events, and the batch's values and matches.
	addrs     []netip.Addr
	idx       []int32
	batchVals []mmdb.Value
	matches   []mmdb.Match
	// chainIdx is the index in the table of each of the rule's
	// chainCols, resolved with colIdx.
	chainIdx []int
	// Each rules: the arrays written, and each event's span of eachBuf.
	// Several-match rules (multi_lookup.go) write theirs there too, and
	// look up into multi.
	eachBuf  []byte
	eachSpan [][2]int32
	multi    []reader.View
	// the chunk's counts, added to the rule's statistics once the chunk
	// is encoded (a chunk that faults is counted once, when done again)
	nHits, nMisses, nNoTable, nBadKey uint64
	nSkipped, nTimeMissing, nTimeBad  uint64
}

// flushStats adds the chunk's counts to the rules' statistics.
func (w *Worker) flushStats() {
	for i, r := range w.p.rules {
		rw := &w.rw[i]
		r.stats.hits.Add(rw.nHits)
		r.stats.misses.Add(rw.nMisses)
		if rw.nNoTable > 0 {
			r.stats.noTable.Add(rw.nNoTable)
		}
		if rw.nBadKey > 0 {
			r.stats.badKey.Add(rw.nBadKey)
		}
		if rw.nSkipped|rw.nTimeMissing|rw.nTimeBad != 0 {
			r.stats.skipped.Add(rw.nSkipped)
			r.stats.timeMissing.Add(rw.nTimeMissing)
			r.stats.timeBad.Add(rw.nTimeBad)
		}
		rw.nHits, rw.nMisses, rw.nNoTable, rw.nBadKey = 0, 0, 0, 0
		rw.nSkipped, rw.nTimeMissing, rw.nTimeBad = 0, 0, 0
	}
}

// useTable sets the rule's table of the snapshot, and resolves the
// columns it writes and those later rules read of it once per table
// version (a new version may have other columns).
func (w *Worker) useTable(r *rule, rw *ruleWork, snap *tables.Snapshot) {
	if snap != nil {
		if r.mmFields != nil {
			rw.mm = r.handle.MMDB(snap)
		} else {
			rw.lut = r.handle.LUT(snap)
		}
	}
	if t := rw.lut; t != nil && (rw.colFor != t || rw.colGen != w.snapGen) {
		for j, c := range r.cfg.Columns {
			rw.colIdx[j] = t.ColumnIndex(c.From)
		}
		for j, c := range r.chainCols {
			rw.chainIdx[j] = t.ColumnIndex(c)
		}
		rw.row.Reset(t.Columns(), t.ColumnTypes())
		rw.colType = t.ColumnTypes()
		rw.colFor, rw.colGen = t, w.snapGen
	}
}

func (w *Worker) runRule(ri int, r *rule, snap *tables.Snapshot, evs []evState) {
	if r.each != nil && r.cfg.MaxMatches <= 1 {
		w.runEach(ri, r, snap, evs)
		return
	}
	rw := &w.rw[ri]
	n := len(evs)
	keys := rw.keys[:n]
	bit := uint64(1) << uint(ri)
	var skipped uint64
	if r.when != nil {
		skipped = w.skipped(r, evs, bit)
	}
	for i := range evs {
		e := &evs[i]
		if e.skips&bit != 0 {
			keys[i] = nil
			continue
		}
		if len(r.fields) == 1 {
			keys[i] = w.fieldValue(i, e, &r.fields[0])
			continue
		}
		s := len(w.scratch)
		ok := true
		for j := range r.fields {
			v := w.fieldValue(i, e, &r.fields[j])
			if v == nil {
				ok = false
				break
			}
			if j > 0 {
				w.scratch = append(w.scratch, format.KeySeparator)
			}
			w.scratch = append(w.scratch, v...)
		}
		if !ok {
			w.scratch = w.scratch[:s]
			keys[i] = nil
			continue
		}
		keys[i] = w.scratch[s:len(w.scratch):len(w.scratch)]
	}
	hit := rw.hit[:n]
	clear(hit)
	var hits, badKey uint64
	w.useTable(r, rw, snap)
	if r.timeSrc >= 0 {
		w.countTimes(r, rw, n)
	}
	if rw.multi != nil {
		rw.eachBuf = rw.eachBuf[:0]
		clear(rw.eachSpan[:n])
	}
	switch {
	case rw.lut != nil && rw.multi != nil:
		var times []int64
		if r.timeSrc >= 0 && rw.lut.TimeBounded() {
			times = w.times[r.timeSrc*len(w.evs):]
		}
		hits = w.matchRows(r, rw, rw.lut, keys, times, hit)
	case rw.lut != nil:
		t := rw.lut
		views := rw.views[:n]
		if m, ok := w.matcher(r, t); ok && r.timeSrc >= 0 {
			matchAt(m, keys, w.times[r.timeSrc*len(w.evs):], views)
		} else {
			t.LookupBatch(keys, views)
		}
		for i := range views {
			if keys[i] != nil && views[i].Len() > 0 {
				hit[i] = true
				hits++
			}
		}
	case rw.mm != nil:
		nf := r.mmFields.Len()
		c := &rw.cache
		if c.gen != w.snapGen || c.slots == nil {
			c.reset(nf, w.snapGen)
			rw.recs.Reset()
		}
		// Answer what the cache holds; look the rest up in one batch.
		useCache := c.on()
		addrs, idx := rw.addrs[:0], rw.idx[:0]
		cached := 0
		for i, k := range keys {
			if k == nil {
				continue
			}
			ip, ok := parseIP(k)
			if !ok {
				badKey++
				continue
			}
			if useCache {
				// Every address of a matched network gets the same record,
				// so a cached network that contains ip answers without a
				// lookup.
				if e := c.slot(ip); e.valid && e.prefix.Contains(ip) {
					copyValues(rw.mmVals[i*nf:(i+1)*nf], c.vals[e.idx*nf:(e.idx+1)*nf])
					cached++
					if e.found {
						hit[i] = true
						hits++
					}
					continue
				}
			}
			addrs = append(addrs, ip)
			idx = append(idx, int32(i))
		}
		c.account(len(addrs)+cached, cached)
		if len(addrs) > 0 {
			ms := rw.matches[:len(addrs)]
			if len(addrs) == n {
				// Every event is looked up: the values go straight to
				// their events.
				_ = rw.mm.LookupFieldsCached(addrs, r.mmFields, rw.mmVals[:n*nf], ms, &rw.recs)
			} else {
				bv := rw.batchVals[:len(addrs)*nf]
				_ = rw.mm.LookupFieldsCached(addrs, r.mmFields, bv, ms, &rw.recs)
				for j, i := range idx {
					copyValues(rw.mmVals[int(i)*nf:(int(i)+1)*nf], bv[j*nf:(j+1)*nf])
				}
			}
			for j, i := range idx {
				m := &ms[j]
				if m.Found() {
					hit[i] = true
					hits++
				}
				if !useCache {
					continue
				}
				if p := m.Prefix(); p.IsValid() {
					e := c.slot(addrs[j])
					e.valid, e.prefix, e.found = true, p, m.Found()
					copyValues(c.vals[e.idx*nf:(e.idx+1)*nf], rw.mmVals[int(i)*nf:(int(i)+1)*nf])
				}
			}
		}
		rw.addrs, rw.idx = addrs, idx
	default:
		rw.nNoTable += uint64(n) - skipped
		for i := range evs {
			if evs[i].skips&bit == 0 {
				evs[i].tags |= tagNoTable
			}
		}
	}
	for i := range evs {
		if !hit[i] {
			evs[i].misses |= bit
		}
	}
	if rw.multi != nil {
		rw.multiMisses(r, evs, hit, bit)
	}
	rw.nHits += hits
	rw.nMisses += uint64(n) - hits - skipped
	rw.nSkipped += skipped
	rw.nBadKey += badKey
}

// appendTyped appends v, the value of column ci of a table with typed
// columns (colType is set), as rowjson writes it.
func (rw *ruleWork) appendTyped(buf, v []byte, ci int) []byte {
	return rowjson.AppendValue(buf, rw.colType[ci], v)
}
