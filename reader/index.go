package reader

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/lutkit/lutkit/format"
	"github.com/lutkit/lutkit/internal/prefetch"
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
// bucket's partition, chooses the bucket (the second only when the first
// is full) and has the slot's fingerprint, and that no other slot of the
// key's buckets holds the key; then as many full slots in each partition
// as its keys, and the record (check). The partitions are checked on
// GOMAXPROCS goroutines, each starting the loads of the next bucket's
// records while it checks a bucket, so that their cache misses overlap;
// the error is that of the first damaged partition. check must be safe
// for concurrent use (a suffix table's records a label mask atomically).
func (t *Table) verifyBuckets(progress func(done, total uint64), check func(off uint64, r format.Record) error) error {
	np := t.buckets.Partitions()
	errs := make([]error, np)
	var (
		next, done atomic.Uint64
		failed     atomic.Bool
		mu         sync.Mutex // serialises progress
		wg         sync.WaitGroup
	)
	report := func(n uint64) {
		if progress == nil {
			return
		}
		d := done.Add(n)
		mu.Lock()
		progress(d, t.header.Rows)
		mu.Unlock()
	}
	for range min(runtime.GOMAXPROCS(0), np) {
		wg.Go(func() {
			// Partitions are taken in order and a worker stops only
			// between them, so every partition below a damaged one is
			// checked whole: the first error is always the same.
			for !failed.Load() {
				i := int(next.Add(1) - 1)
				if i >= np {
					return
				}
				if errs[i] = t.verifyPartition(i, check, report); errs[i] != nil {
					failed.Store(true)
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// verifyPartition is verifyBuckets for partition i; it calls report with
// the keys checked since its last call, about every 65,536 keys.
func (t *Table) verifyPartition(i int, check func(off uint64, r format.Record) error, report func(uint64)) error {
	dataOff, slotsOff := int64(t.sections[format.SectionData].Off), int64(t.sections[format.SectionSlots].Off)
	bk := t.buckets
	le := binary.LittleEndian
	base, nb, _, nkey := bk.Partition(i)
	dataBase := uintptr(unsafe.Pointer(unsafe.SliceData(t.data)))
	var pf prefetch.Batch
	full, reported := uint64(0), uint64(0)
	for b := base; b < base+nb; b++ {
		if b+1 < base+nb {
			for j := uint64(0); j < format.BucketEntries; j++ {
				slot := le.Uint64(t.slots[(b+1)*format.BucketSize+8*j:])
				if off := format.SlotRecord(slot); slot != format.EmptySlot && off < uint64(len(t.data)) {
					pf.Add(dataBase + uintptr(off))
				}
			}
			pf.Flush()
		}
		empty := false
		for j := uint64(0); j < format.BucketEntries; j++ {
			at := b*format.BucketSize + 8*j
			slot := le.Uint64(t.slots[at:])
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
			if b != b1 && le.Uint64(t.slots[(b1+1)*format.BucketSize-8:]) == format.EmptySlot {
				return fmt.Errorf("%w: %w", ErrVerify, format.Corruptf(dataOff+int64(off), "key %q is in its second bucket %d while its first, %d, has room", r.Key(), b, b1))
			}
			if t.twin(at, slot, r.Key(), b1, b2) {
				return fmt.Errorf("%w: %w", ErrVerify, format.Corruptf(dataOff+int64(off), "key %q is in two slots", r.Key()))
			}
			if err := check(off, r); err != nil {
				return err
			}
			full++
		}
		if full-reported >= 1<<16 {
			report(full - reported)
			reported = full
		}
	}
	if full != nkey {
		return fmt.Errorf("%w: %w", ErrVerify, format.Corruptf(slotsOff+int64(base*format.BucketSize), "partition %d holds %d keys in its buckets, the bucket table says %d", i, full, nkey))
	}
	report(full - reported)
	return nil
}

// twin reports whether a slot of buckets b1 and b2 other than the one at
// byte at of SLOTS holds key too: the same record, or another record of
// the same key. Only slots of the same fingerprint are compared, so that
// another record is read one time in 2^32.
func (t *Table) twin(at, slot uint64, key []byte, b1, b2 uint64) bool {
	for _, b := range []uint64{b1, b2} {
		for j := uint64(0); j < format.BucketEntries; j++ {
			o := b*format.BucketSize + 8*j
			s := binary.LittleEndian.Uint64(t.slots[o:])
			if o == at || s == format.EmptySlot || format.SlotFingerprint(s) != format.SlotFingerprint(slot) {
				continue
			}
			if format.SlotRecord(s) == format.SlotRecord(slot) {
				return true
			}
			if r, ok := format.ParseRecord(t.data, format.SlotRecord(s), t.ncols); ok && bytes.Equal(r.Key(), key) {
				return true
			}
		}
		if b1 == b2 {
			break
		}
	}
	return false
}
