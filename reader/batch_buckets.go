package reader

import (
	"encoding/binary"
	"unsafe"

	"github.com/lutkit/lutkit/format"
	"github.com/lutkit/lutkit/internal/prefetch"
)

// lookupBatchBuckets is LookupBatch in a bucketed index, in stages of 32
// keys: hash every key and start loading its first bucket; scan it for
// the key's fingerprint, and start loading the record of the first slot
// that has it or, when there is none and the bucket is full, the key's
// second bucket (a key is there only when its first is full: FORMAT.md);
// scan those second buckets likewise; compare. Four keys in five are in
// their first bucket at the compiler's load, so a batch loads about 1.2
// buckets a key where Find, which wants the latency of one miss, loads
// both. A key whose first candidate is not its record (another key of
// the same fingerprint, one in 2^32) is looked up again whole.
func (t *Table) lookupBatchBuckets(keys [][]byte, out []View) int {
	found := 0
	var (
		hs    [batchChunk]uint64
		b2s   [batchChunk]uint64
		slots [batchChunk]uint64
		state [batchChunk]uint8 // 0 absent, 1 candidate in slots, 2 look in b2s
		addrs [2 * batchChunk]uintptr
	)
	bk := t.buckets
	slotBase := uintptr(unsafe.Pointer(unsafe.SliceData(t.slots)))
	dataBase := uintptr(unsafe.Pointer(unsafe.SliceData(t.data)))
	last := uint64(len(t.data)) - 1
	// scan looks bucket b up for fingerprint fp: the first slot that has
	// it, and whether the bucket is full.
	scan := func(b uint64, fp uint32) (uint64, bool, bool) {
		s := t.slots[b*format.BucketSize : (b+1)*format.BucketSize]
		for j := 0; j < format.BucketSize; j += 8 {
			e := binary.LittleEndian.Uint64(s[j:])
			if e == format.EmptySlot {
				return 0, false, false
			}
			if format.SlotFingerprint(e) == fp {
				return e, true, true
			}
		}
		return 0, false, true
	}
	record := func(m int, slot uint64) int {
		if off := format.SlotRecord(slot); off <= last {
			addrs[m] = dataBase + uintptr(off)
			addrs[m+1] = dataBase + uintptr(min(off+t.touch, last))
			return m + 2
		}
		return m
	}
	for len(keys) > 0 {
		n := min(len(keys), batchChunk)
		ks, os := keys[:n], out[:n]
		m := 0
		for i, k := range ks {
			h := t.finder.Hash(k)
			hs[i] = h
			state[i] = 0
			if b1, b2, _, ok := bk.Choices(h); ok {
				addrs[m] = slotBase + uintptr(b1*format.BucketSize)
				m++
				slots[i], b2s[i], state[i] = b1, b2, 2
			}
		}
		prefetch.Lines(addrs[:m])
		m = 0
		for i := range ks {
			if state[i] == 0 {
				continue
			}
			b1 := slots[i]
			slot, ok, full := scan(b1, format.Fingerprint(hs[i]))
			switch {
			case ok:
				slots[i], state[i] = slot, 1
				m = record(m, slot)
			case full && b2s[i] != b1:
				addrs[m] = slotBase + uintptr(b2s[i]*format.BucketSize)
				m++
			default:
				state[i] = 0
			}
		}
		prefetch.Lines(addrs[:m])
		m = 0
		for i := range ks {
			if state[i] != 2 {
				continue
			}
			if slot, ok, _ := scan(b2s[i], format.Fingerprint(hs[i])); ok {
				slots[i], state[i] = slot, 1
				m = record(m, slot)
			} else {
				state[i] = 0
			}
		}
		prefetch.Lines(addrs[:m])
		for i, k := range ks {
			var r format.Record
			ok := false
			if state[i] == 1 {
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
