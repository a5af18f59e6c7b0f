package format

import (
	"encoding/binary"
	"fmt"
)

// Finder looks a table's records up by key, reading its MPHF, SLOTS and
// DATA sections in place. Find does in one function what HashKey,
// MPHF.Index, the slot's fingerprint check, ParseRecord and the key
// comparison do, so that the lookup of a key of 4 to 16 bytes in a narrow
// record makes no call: in a lookup of a few hundred instructions, the
// calls between those steps, with the registers saved around each, were
// a large part.
type Finder struct {
	hasher KeyHasher
	mphf   MPHF
	// bk is the bucket table of a bucketed index (buckets.go), whose
	// buckets slots then holds, or nil for a perfect hash (mphf).
	bk    *Buckets
	slots []byte
	data  []byte
	cols  int
	// narrow is the header size of a narrow record (2*(cols+1)), or 0
	// when records are always parsed by ParseRecord (no columns, or too
	// many for the fast path).
	narrow int
}

// maxNarrowColumns bounds the column count of Find's narrow-record fast
// path, so that its offsets stay far from overflow.
const maxNarrowColumns = 1 << 20

// NewFinder returns the Finder of a table: its hash seed, perfect hash,
// SLOTS section (8 bytes a row) and DATA section, and its column count.
func NewFinder(seed uint64, f *MPHF, slots, data []byte, cols int) (Finder, error) {
	if uint64(len(slots)) != 8*f.n {
		return Finder{}, fmt.Errorf("SLOTS section of %d bytes does not hold %d rows", len(slots), f.n)
	}
	if cols < 0 {
		return Finder{}, fmt.Errorf("%d columns", cols)
	}
	fd := Finder{hasher: NewKeyHasher(seed), mphf: *f, slots: slots, data: data, cols: cols}
	if cols > 0 && cols <= maxNarrowColumns {
		fd.narrow = 2 * (cols + 1)
	}
	return fd, nil
}

// NewBucketFinder returns the Finder of a table with a bucketed index:
// its hash seed, bucket table, SLOTS section (the buckets), DATA section
// and column count.
func NewBucketFinder(seed uint64, bk *Buckets, slots, data []byte, cols int) (Finder, error) {
	if uint64(len(slots)) != BucketSize*bk.total {
		return Finder{}, fmt.Errorf("SLOTS section of %d bytes does not hold %d buckets", len(slots), bk.total)
	}
	fd, err := NewFinder(seed, &MPHF{}, nil, data, cols)
	fd.bk, fd.slots = bk, slots
	return fd, err
}

// Hash returns HashKey(key, seed) for the table's seed.
func (f *Finder) Hash(key []byte) uint64 { return f.hasher.Hash(key) }

// Find returns the record of a normalised key, and reports whether there
// is one.
func (f *Finder) Find(key []byte) (Record, bool) {
	var h uint64
	switch l := len(key); {
	case l >= 4 && l <= 8:
		h = f.hasher.hash4to8(key)
	case l > 8 && l <= 16:
		h = f.hasher.hash9to16(key)
	default:
		h = f.hasher.Hash(key)
	}
	if f.bk != nil {
		return f.findBucketed(h, key)
	}
	m := &f.mphf
	if m.n == 0 {
		return Record{}, false
	}
	var pos uint64
	if m.parts != nil {
		pos = m.partIndex(h)
	} else {
		pos = position(h, m.pilot(h), m.m)
		if pos >= m.n {
			pos = m.remapped(pos)
		}
	}
	// Match, in line.
	slot := f.Slot(pos)
	if SlotFingerprint(slot) != Fingerprint(h) {
		return Record{}, false
	}
	off := SlotRecord(slot)
	if n := len(key); uint(n-4) <= 12 && off < uint64(len(f.data)) {
		rec, hdr := f.data[off:], f.narrow
		if hdr >= 2 && len(rec) >= hdr {
			le := binary.LittleEndian
			if int(le.Uint16(rec)) == n {
				vals := hdr + n
				end := vals + int(le.Uint16(rec[hdr-2:hdr]))
				if end > len(rec) || !equalShort(rec[hdr:vals], key) {
					return Record{}, false
				}
				return Record{b: rec[:end], cols: uint32(f.cols), vals: uint32(vals)}, true
			}
		}
	}
	return f.match(off, key)
}

// Slot returns the SLOTS entry at pos, which must be below the row count
// (MPHF.Index's results are).
func (f *Finder) Slot(pos uint64) uint64 {
	return binary.LittleEndian.Uint64(f.slots[8*pos : 8*pos+8])
}

// Match returns the record a SLOTS entry points at, if the entry's
// fingerprint is that of h and the record's key is key. It checks that
// the record lies within DATA.
func (f *Finder) Match(slot, h uint64, key []byte) (Record, bool) {
	if SlotFingerprint(slot) != Fingerprint(h) {
		return Record{}, false
	}
	return f.At(slot, key)
}

// At returns the record a SLOTS entry points at, if its key is key, for a
// caller that has checked the entry's fingerprint (Match is At with the
// check). It checks that the record lies within DATA.
func (f *Finder) At(slot uint64, key []byte) (Record, bool) {
	// A narrow record and a key of 4 to 16 bytes: ParseRecord's narrow
	// case and equalKey's short one, without a call. (Find has the same code in
	// line; TestFinder checks that they agree.)
	off := SlotRecord(slot)
	if n := len(key); uint(n-4) <= 12 && off < uint64(len(f.data)) {
		rec, hdr := f.data[off:], f.narrow
		if hdr >= 2 && len(rec) >= hdr {
			le := binary.LittleEndian
			if int(le.Uint16(rec)) == n {
				vals := hdr + n
				end := vals + int(le.Uint16(rec[hdr-2:hdr]))
				if end > len(rec) || !equalShort(rec[hdr:vals], key) {
					return Record{}, false
				}
				return Record{b: rec[:end], cols: uint32(f.cols), vals: uint32(vals)}, true
			}
		}
	}
	return f.match(off, key)
}

// match is Match's general case: any record, any key.
func (f *Finder) match(off uint64, key []byte) (Record, bool) {
	r, ok := ParseRecord(f.data, off, f.cols)
	if !ok || !equalKey(r.Key(), key) {
		return Record{}, false
	}
	return r, true
}

// findBucketed is Find in a bucketed index. It reads the first slot of
// both buckets before it compares either, so that the two cache misses
// overlap, and then scans them side by side.
func (f *Finder) findBucketed(h uint64, key []byte) (Record, bool) {
	b1, b2, _, ok := f.bk.Choices(h)
	if !ok {
		return Record{}, false
	}
	s1 := f.slots[b1*BucketSize : b1*BucketSize+BucketSize]
	s2 := f.slots[b2*BucketSize : b2*BucketSize+BucketSize]
	fp := Fingerprint(h)
	le := binary.LittleEndian
	for j := 0; j < BucketSize; j += 8 {
		e1, e2 := le.Uint64(s1[j:]), le.Uint64(s2[j:])
		if SlotFingerprint(e1) == fp {
			if r, ok := f.At(e1, key); ok {
				return r, true
			}
		}
		if SlotFingerprint(e2) == fp {
			if r, ok := f.At(e2, key); ok {
				return r, true
			}
		}
		if e1&e2 == EmptySlot {
			break
		}
	}
	return Record{}, false
}

// Buckets returns the bucket table of a bucketed index, or nil.
func (f *Finder) Buckets() *Buckets { return f.bk }
