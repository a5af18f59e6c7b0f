package reader

import (
	"encoding/binary"
	"fmt"

	"github.com/lutkit/lutkit/format"
)

// notWithBuckets are the feature bits a table with a bucketed index may
// not have: the compiler gives one to exact and suffix tables only (a
// suffix table's lookups are exact lookups of its key's suffixes), since
// the others keep their entries in memory and get a perfect hash.
const notWithBuckets = format.FeaturePartitionedMPHF | format.FeatureWildcard |
	format.FeaturePattern | format.FeatureRange | format.FeatureTimeBound | format.FeatureRangeIPv4

// openIndex reads the table's index from its MPHF section (a perfect
// hash, or the bucket table of a bucketed index) and its SLOTS section,
// and makes its Finder.
func (t *Table) openIndex(mphf []byte) error {
	h := &t.header
	mphfOff, slotsOff := int64(t.sections[format.SectionMPHF].Off), int64(t.sections[format.SectionSlots].Off)
	if h.Incompat&format.FeatureBucketedSlots != 0 {
		if h.Incompat&notWithBuckets != 0 {
			return format.Corruptf(12, "a bucketed index in a table of feature bits %#x", h.Incompat)
		}
		bk, err := format.ParseBuckets(mphf, h.Rows, uint64(len(t.slots)))
		if err != nil {
			return format.Corruptf(mphfOff, "%v", err)
		}
		t.buckets = bk
		if t.finder, err = format.NewBucketFinder(h.Seed, bk, t.slots, t.data, t.ncols); err != nil {
			return format.Corruptf(slotsOff, "%v", err)
		}
		return nil
	}
	var err error
	t.mphf, err = format.ParseTableMPHF(mphf, h.Rows, h.Incompat)
	if err != nil {
		return format.Corruptf(mphfOff, "%v", err)
	}
	if uint64(len(t.slots)) != 8*h.Rows || h.Rows > uint64(len(t.file)) {
		return format.Corruptf(slotsOff, "SLOTS section of %d bytes does not hold %d rows", len(t.slots), h.Rows)
	}
	if t.finder, err = format.NewFinder(h.Seed, t.mphf, t.slots, t.data, t.ncols); err != nil {
		return format.Corruptf(slotsOff, "%v", err)
	}
	return nil
}

// verifyBuckets checks every bucket of a bucketed index: its full slots
// first, each pointing at a well-formed record whose key's hash is of the
// bucket's partition, chooses the bucket and has the slot's fingerprint,
// and whose lookup finds that very record, in that slot alone (so that
// no two slots hold one key); then as many full slots in each partition as its keys, and the
// record (check).
func (t *Table) verifyBuckets(progress func(done, total uint64), check func(off uint64, r format.Record) error) error {
	dataOff, slotsOff := int64(t.sections[format.SectionData].Off), int64(t.sections[format.SectionSlots].Off)
	bk := t.buckets
	done := uint64(0)
	for i := range bk.Partitions() {
		base, nb, _, nkey := bk.Partition(i)
		full := uint64(0)
		for b := base; b < base+nb; b++ {
			if progress != nil && b&0x1fff == 0 {
				progress(done+full, t.header.Rows)
			}
			empty := false
			for j := uint64(0); j < format.BucketEntries; j++ {
				at := b*format.BucketSize + 8*j
				slot := binary.LittleEndian.Uint64(t.slots[at:])
				if slot == format.EmptySlot {
					empty = true
					continue
				}
				if empty {
					return fmt.Errorf("%w: %w", ErrVerify, format.Corruptf(slotsOff+int64(at), "bucket %d holds a key after an empty slot", b))
				}
				off := format.SlotRecord(slot)
				r, ok := format.ParseRecord(t.data, off, t.ncols)
				if !ok || !r.Valid() {
					return fmt.Errorf("%w: %w", ErrVerify, format.Corruptf(dataOff+int64(off), "bucket %d points at a malformed record", b))
				}
				h := format.HashKey(r.Key(), t.header.Seed)
				b1, b2, part, _ := bk.Choices(h)
				if part != i || (b1 != b && b2 != b) || format.Fingerprint(h) != format.SlotFingerprint(slot) {
					return fmt.Errorf("%w: %w", ErrVerify, format.Corruptf(dataOff+int64(off), "key %q does not find its own row (bucket %d, hash gives %d and %d)", r.Key(), b, b1, b2))
				}
				if live, ok := t.finder.Find(r.Key()); !ok || &live.Bytes()[0] != &r.Bytes()[0] || t.slotsOf(off, b1, b2) != 1 {
					return fmt.Errorf("%w: %w", ErrVerify, format.Corruptf(dataOff+int64(off), "key %q is in two slots", r.Key()))
				}
				if err := check(off, r); err != nil {
					return err
				}
				full++
			}
		}
		if full != nkey {
			return fmt.Errorf("%w: %w", ErrVerify, format.Corruptf(slotsOff+int64(base*format.BucketSize), "partition %d holds %d keys in its buckets, the bucket table says %d", i, full, nkey))
		}
		done += full
	}
	return nil
}

// slotsOf counts the slots of buckets b1 and b2 (once, when they are the
// same) that point at the record at off.
func (t *Table) slotsOf(off, b1, b2 uint64) int {
	n := 0
	for _, b := range []uint64{b1, b2} {
		for j := uint64(0); j < format.BucketEntries; j++ {
			slot := binary.LittleEndian.Uint64(t.slots[b*format.BucketSize+8*j:])
			if slot != format.EmptySlot && format.SlotRecord(slot) == off {
				n++
			}
		}
		if b1 == b2 {
			break
		}
	}
	return n
}
