package reader

import (
	"unsafe"

	"github.com/lutkit/lutkit/format"
	"github.com/lutkit/lutkit/internal/prefetch"
)

// batchChunk is how many keys LookupBatch moves through each stage at once:
// more cache misses than the CPU can keep in flight, few enough for the
// stage arrays to live on the stack.
const batchChunk = 32

// LookupBatch looks up every key, setting out[i] to its row or to the zero
// View when absent, and returns the number found. len(out) must be at least
// len(keys). The lookups run stage by stage, 32 keys at a time: hash every
// key, then evaluate the perfect hash, then load every slot, then every
// record, each stage prefetching the next one's reads (see package
// prefetch), so that the cache misses of different keys overlap instead of
// queueing. The Views alias the mapping (see Lookup).
func (t *Table) LookupBatch(keys [][]byte, out []View) int {
	out = out[:len(keys)]
	if t.header.Rows == 0 {
		clear(out)
		return 0
	}
	if t.slow {
		n := 0
		for i, k := range keys {
			v, ok := t.Lookup(k)
			out[i] = v
			if ok {
				n++
			}
		}
		return n
	}
	if t.buckets != nil {
		return t.lookupBatchBuckets(keys, out)
	}
	found := 0
	var (
		hs    [batchChunk]uint64
		slots [batchChunk]uint64
		cand  [batchChunk]bool // the slot's fingerprint is the key's
		addrs [2 * batchChunk]uintptr
	)
	slotBase := uintptr(unsafe.Pointer(unsafe.SliceData(t.slots)))
	dataBase := uintptr(unsafe.Pointer(unsafe.SliceData(t.data)))
	last := uint64(len(t.data)) - 1
	for len(keys) > 0 {
		n := min(len(keys), batchChunk)
		ks, os := keys[:n], out[:n]
		// Stage 1: hash; start loading the pilots.
		for i, k := range ks {
			h := t.finder.Hash(k)
			hs[i] = h
			addrs[i] = t.mphf.PilotAddr(h)
		}
		prefetch.Lines(addrs[:n])
		// Stage 2: slot positions; start loading the slots.
		for i := range ks {
			slots[i] = t.mphf.Index(hs[i])
			addrs[i] = slotBase + uintptr(8*slots[i])
		}
		prefetch.Lines(addrs[:n])
		// Stage 3: load the slots; start loading each record whose
		// fingerprint matches. A record's header and key usually straddle
		// two cache lines: load both, so that neither is a miss of its own
		// later.
		m := 0
		for i := range ks {
			slot := t.finder.Slot(slots[i])
			slots[i] = slot
			cand[i] = format.SlotFingerprint(slot) == format.Fingerprint(hs[i])
			if off := format.SlotRecord(slot); cand[i] && off <= last {
				addrs[m] = dataBase + uintptr(off)
				addrs[m+1] = dataBase + uintptr(min(off+t.touch, last))
				m += 2
			}
		}
		prefetch.Lines(addrs[:m])
		// Stage 4: parse and compare.
		for i, k := range ks {
			var r format.Record
			ok := false
			if cand[i] {
				r, ok = t.finder.At(slots[i], k)
			}
			os[i] = View{r}
			if ok {
				found++
			}
		}
		keys, out = keys[n:], out[n:]
	}
	return found
}

// TouchRows starts loading every cache line of each row in views (see
// package prefetch), so that the cache misses of all the rows overlap
// instead of queueing one after another when their values are read row by
// row. Call it after LookupBatch, just before most columns of each row are
// read.
func TouchRows(views []View) {
	var pf prefetch.Batch
	for _, v := range views {
		b := v.rec.Bytes()
		if len(b) == 0 {
			continue
		}
		base := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
		for off := 0; off < len(b); off += 64 {
			pf.Add(base + uintptr(off))
		}
		pf.Add(base + uintptr(len(b)-1))
	}
	pf.Flush()
}
