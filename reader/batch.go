package reader

import (
	"bytes"
	"encoding/binary"
	"runtime"

	"github.com/lutkit/lutkit/format"
)

// batchChunk is how many keys LookupBatch moves through each stage at once:
// enough to keep 15-20 cache misses in flight, small enough for the stage
// arrays to live on the stack.
const batchChunk = 32

// LookupBatch looks up every key, setting out[i] to its row or to the zero
// View when absent, and returns the number found. len(out) must be at least
// len(keys). The lookups run stage by stage: hash every key and evaluate
// the perfect hash, then load every slot, then every record, so that the
// cache misses of different keys overlap instead of queueing. The Views
// alias the mapping (see Lookup).
func (t *Table) LookupBatch(keys [][]byte, out []View) int {
	out = out[:len(keys)]
	if t.header.Rows == 0 {
		clear(out)
		return 0
	}
	if t.fold {
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
	found := 0
	var (
		hs    [batchChunk]uint64
		slots [batchChunk]uint64
	)
	for len(keys) > 0 {
		n := min(len(keys), batchChunk)
		ks, os := keys[:n], out[:n]
		// Stage 1: hash, bucket, pilot (cache-resident) and slot position.
		for i, k := range ks {
			h := format.HashKey(k, t.header.Seed)
			hs[i] = h
			slots[i] = t.mphf.Index(h)
		}
		// Stage 2: load the slots; the loads are independent.
		for i := range ks {
			slots[i] = binary.LittleEndian.Uint64(t.slots[8*slots[i]:])
		}
		// Stage 3: touch each record whose fingerprint matches, so the
		// misses overlap, then parse and compare.
		// A record's header and key usually straddle two cache lines:
		// touch both, so that neither is a miss of its own later.
		var sink byte
		last := uint64(len(t.data)) - 1
		for i := range ks {
			if format.SlotFingerprint(slots[i]) == format.Fingerprint(hs[i]) {
				if off := format.SlotRecord(slots[i]); off <= last {
					sink ^= t.data[off] ^ t.data[min(off+t.touch, last)]
				}
			}
		}
		runtime.KeepAlive(sink)
		for i, k := range ks {
			os[i] = View{}
			if format.SlotFingerprint(slots[i]) != format.Fingerprint(hs[i]) {
				continue
			}
			r, ok := format.ParseRecord(t.data, format.SlotRecord(slots[i]), t.ncols)
			if ok && bytes.Equal(r.Key(), k) {
				os[i] = View{r}
				found++
			}
		}
		keys, out = keys[n:], out[n:]
	}
	return found
}

// TouchRows reads one byte of every cache line of each row in views, so that
// the cache misses of all the rows overlap here instead of queueing one
// after another when their values are read row by row. Call it after
// LookupBatch, just before most columns of each row are read.
func TouchRows(views []View) {
	var sink byte
	for _, v := range views {
		b := v.rec.Bytes()
		for off := 0; off < len(b); off += 64 {
			sink ^= b[off]
		}
		if len(b) > 0 {
			sink ^= b[len(b)-1]
		}
	}
	runtime.KeepAlive(sink)
}
