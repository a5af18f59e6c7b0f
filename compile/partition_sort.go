package compile

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	mathbits "math/bits"
	"slices"
)

// A partition's entries are sorted by a bucket pass, not by comparisons:
// the bits of the hash below the partition's pick one of up to
// 1<<sortBits buckets, every entry is decoded straight into its bucket,
// and each bucket (a handful of entries, the hashes being uniform) is
// sorted on its own. The order is that of compareEntries, the same as
// slices.SortFunc gives, so the table is the same bytes; at 100M rows
// the comparison sort took 40% of the compile's CPU.

// sortBits bounds the bucket count: 1<<16 counters (256 KiB) stay in the
// core's L2 cache.
const sortBits = 16

// insertionRun is the largest bucket sorted by insertion; a larger one
// (many rows of one key) goes to slices.SortFunc.
const insertionRun = 32

// readSorted reads partition i into b.entries, in the order of
// compareEntries.
func (s *spiller) readSorted(i int, b *partBuffers) error {
	n := int(s.counts[i])
	b.raw = slices.Grow(b.raw[:0], entrySize*n)[:entrySize*n]
	if _, err := s.files[i].ReadAt(b.raw, 0); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("reading partition %d: %w", i, err)
	}
	bits := min(sortBits, max(1, mathbits.Len(uint(n))))
	shift := 64 - spillBits - bits
	mask := uint64(1)<<bits - 1
	// count[k+1] counts bucket k; after the prefix sum count[k] is where
	// bucket k starts, and after the scatter where it ends.
	b.count = slices.Grow(b.count[:0], 1<<bits+1)[:1<<bits+1]
	clear(b.count)
	le := binary.LittleEndian
	for p := 0; p < len(b.raw); p += entrySize {
		b.count[(le.Uint64(b.raw[p:])>>shift)&mask+1]++
	}
	for k := 1; k < len(b.count); k++ {
		b.count[k] += b.count[k-1]
	}
	b.entries = slices.Grow(b.entries[:0], n)[:n]
	for p := 0; p < len(b.raw); p += entrySize {
		h := le.Uint64(b.raw[p:])
		k := (h >> shift) & mask
		b.entries[b.count[k]] = entry{hash: h, off: le.Uint64(b.raw[p+8:]), at: int64(le.Uint64(b.raw[p+16:]))}
		b.count[k]++
	}
	start := 0
	for _, end := range b.count[:1<<bits] {
		sortRun(b.entries[start:end])
		start = int(end)
	}
	return nil
}

// sortRun sorts one bucket in the order of compareEntries.
func sortRun(run []entry) {
	if len(run) > insertionRun {
		slices.SortFunc(run, compareEntries)
		return
	}
	for i := 1; i < len(run); i++ {
		for j := i; j > 0 && compareEntries(run[j-1], run[j]) > 0; j-- {
			run[j-1], run[j] = run[j], run[j-1]
		}
	}
}
