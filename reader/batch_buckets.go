package reader

import (
	"encoding/binary"
	"unsafe"

	"github.com/lutkit/lutkit/format"
	"github.com/lutkit/lutkit/internal/prefetch"
)

// lookupBatchBuckets is LookupBatch in a bucketed index, in three stages
// of 32 keys: hash every key and start loading both its buckets; scan the
// buckets for the key's fingerprint and start loading the record of the
// first slot that has it; compare. A key whose first candidate is not its
// record (another key of the same fingerprint, one in 2^32) is looked up
// again whole.
func (t *Table) lookupBatchBuckets(keys [][]byte, out []View) int {
	found := 0
	var (
		hs    [batchChunk]uint64
		slots [batchChunk]uint64
		cand  [batchChunk]bool
		addrs [2 * batchChunk]uintptr
	)
	bk := t.buckets
	dataBase := uintptr(unsafe.Pointer(unsafe.SliceData(t.data)))
	last := uint64(len(t.data)) - 1
	le := binary.LittleEndian
	for len(keys) > 0 {
		n := min(len(keys), batchChunk)
		ks, os := keys[:n], out[:n]
		m := 0
		for i, k := range ks {
			h := t.finder.Hash(k)
			hs[i] = h
			if a1, a2 := bk.BucketAddrs(h, t.slots); a1 != 0 {
				addrs[m], addrs[m+1] = a1, a2
				m += 2
			}
		}
		prefetch.Lines(addrs[:m])
		m = 0
		for i := range ks {
			cand[i] = false
			b1, b2, _, ok := bk.Choices(hs[i])
			if !ok {
				continue
			}
			s1 := t.slots[b1*format.BucketSize : (b1+1)*format.BucketSize]
			s2 := t.slots[b2*format.BucketSize : (b2+1)*format.BucketSize]
			fp := format.Fingerprint(hs[i])
			for j := 0; j < format.BucketSize && !cand[i]; j += 8 {
				e1, e2 := le.Uint64(s1[j:]), le.Uint64(s2[j:])
				switch {
				case format.SlotFingerprint(e1) == fp && e1 != format.EmptySlot:
					slots[i], cand[i] = e1, true
				case format.SlotFingerprint(e2) == fp && e2 != format.EmptySlot:
					slots[i], cand[i] = e2, true
				case e1&e2 == format.EmptySlot:
					j = format.BucketSize
				}
			}
			if off := format.SlotRecord(slots[i]); cand[i] && off <= last {
				addrs[m] = dataBase + uintptr(off)
				addrs[m+1] = dataBase + uintptr(min(off+t.touch, last))
				m += 2
			}
		}
		prefetch.Lines(addrs[:m])
		for i, k := range ks {
			var r format.Record
			ok := false
			if cand[i] {
				if r, ok = t.finder.At(slots[i], k); !ok {
					r, ok = t.finder.Find(k)
				}
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
