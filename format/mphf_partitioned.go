package format

import (
	"encoding/binary"
	"fmt"
	"math/bits"
)

// A partitioned MPHF (feature PARTITIONED_MPHF, version 1.2) splits the
// keys into 2^k partitions by the top k bits of their hash and builds one
// function per partition, over the hash rotated left by k bits (so that
// the bits that chose the partition do not choose the bucket too). The
// slots of partition i follow those of partitions 0..i-1. A compiler
// builds each partition on its own, from that partition's keys alone, so
// memory is bounded by the largest partition and the partitions can be
// built in parallel. A lookup costs one more load than a single function,
// from the partition table, which is small and stays in cache.
const (
	// MaxPartitionBits bounds k in a partitioned function.
	MaxPartitionBits = 16
	// partitionedHeaderSize is n and k, each a little-endian uint64.
	partitionedHeaderSize = 16
)

// PartitionOf returns the partition of a key hash in a function of 2^k
// partitions (1 <= k <= MaxPartitionBits) and the hash that partition's
// function takes.
func PartitionOf(h uint64, k uint) (int, uint64) {
	return int(h >> (64 - k)), bits.RotateLeft64(h, int(k))
}

// partition returns the function of h's partition and the hash it takes.
func (f *MPHF) partition(h uint64) (*MPHF, uint64) {
	return &f.parts[h>>(64-f.k)], bits.RotateLeft64(h, int(f.k))
}

// partIndex is Index for a partitioned function that is not empty.
func (f *MPHF) partIndex(h uint64) uint64 {
	p, h := f.partition(h)
	if p.n == 0 {
		return 0
	}
	pos := position(h, p.pilot(h), p.m)
	if pos >= p.n {
		pos = p.remapped(pos)
	}
	return p.base + pos
}

// NewPartitionedMPHF assembles a partitioned function from the functions
// of its 2^k partitions, in order, each built by BuildMPHF over the
// rotated hashes PartitionOf gives for that partition's keys. The result
// keeps the parts.
func NewPartitionedMPHF(k uint, parts []*MPHF) (*MPHF, error) {
	if k < 1 || k > MaxPartitionBits || len(parts) != 1<<k {
		return nil, fmt.Errorf("a partitioned MPHF of %d partitions with %d partition bits", len(parts), k)
	}
	f := &MPHF{k: k, parts: make([]MPHF, len(parts))}
	for i, p := range parts {
		f.parts[i] = *p
		f.parts[i].base = f.n
		f.n += p.n
	}
	return f, nil
}

// partitionedSize is Size for a partitioned function.
func (f *MPHF) partitionedSize() int {
	size := partitionedHeaderSize + 8*(len(f.parts)+1)
	for i := range f.parts {
		size += align8(len(f.parts[i].pilots)) + len(f.parts[i].remap)
	}
	return size
}

// appendPartitioned appends the serialized partitioned function: n and k
// as little-endian uint64s, the 2^k+1 partition bases (the first slot of
// each partition, then n), and for each partition in order its pilots
// padded to 8 bytes and its remap table, sized from its key count as in a
// single function.
func (f *MPHF) appendPartitioned(dst []byte) []byte {
	le := binary.LittleEndian
	dst = le.AppendUint64(dst, f.n)
	dst = le.AppendUint64(dst, uint64(f.k))
	for i := range f.parts {
		dst = le.AppendUint64(dst, f.parts[i].base)
	}
	dst = le.AppendUint64(dst, f.n)
	for i := range f.parts {
		p := &f.parts[i]
		dst = append(dst, p.pilots...)
		dst = append(dst, make([]byte, align8(len(p.pilots))-len(p.pilots))...)
		dst = append(dst, p.remap...)
	}
	return dst
}

// ParsePartitionedMPHF reads a serialized partitioned function in place
// (the result aliases b) and checks that it is consistent with n keys, as
// ParseMPHF does for a single function.
func ParsePartitionedMPHF(b []byte, n uint64) (*MPHF, error) {
	le := binary.LittleEndian
	if len(b) < partitionedHeaderSize {
		return nil, fmt.Errorf("partitioned MPHF section of %d bytes is shorter than its %d-byte header", len(b), partitionedHeaderSize)
	}
	if got := le.Uint64(b); got != n {
		return nil, fmt.Errorf("MPHF holds %d keys, the header says %d rows", got, n)
	}
	k := le.Uint64(b[8:])
	if k < 1 || k > MaxPartitionBits {
		return nil, fmt.Errorf("MPHF has %d partition bits, want 1 to %d", k, MaxPartitionBits)
	}
	np := 1 << k
	at := uint64(partitionedHeaderSize + 8*(np+1))
	if uint64(len(b)) < at {
		return nil, fmt.Errorf("partitioned MPHF section of %d bytes is shorter than its %d partition bases", len(b), np+1)
	}
	f := &MPHF{n: n, k: uint(k), parts: make([]MPHF, np)}
	bases := b[partitionedHeaderSize:at]
	if le.Uint64(bases) != 0 || le.Uint64(bases[8*np:]) != n {
		return nil, fmt.Errorf("MPHF partition bases do not run from 0 to %d", n)
	}
	for i := range f.parts {
		base, next := le.Uint64(bases[8*i:]), le.Uint64(bases[8*i+8:])
		if next < base {
			return nil, fmt.Errorf("MPHF partition %d starts after the next one", i)
		}
		pn := next - base
		m, nb := mphfSizes(pn)
		pl := uint64(align8(int(2 * nb)))
		if uint64(len(b))-at < pl+4*(m-pn) {
			return nil, fmt.Errorf("partitioned MPHF section of %d bytes ends inside partition %d", len(b), i)
		}
		p := &f.parts[i]
		*p = MPHF{n: pn, m: m, nb: nb, base: base, pilots: b[at : at+2*nb], remap: b[at+pl : at+pl+4*(m-pn)]}
		at += pl + 4*(m-pn)
		for j := uint64(0); j < m-pn; j++ {
			if uint64(le.Uint32(p.remap[4*j:])) >= pn {
				return nil, fmt.Errorf("MPHF partition %d: remap entry %d points past its last slot", i, j)
			}
		}
	}
	if at != uint64(len(b)) {
		return nil, fmt.Errorf("partitioned MPHF section is %d bytes, want %d", len(b), at)
	}
	return f, nil
}

// ParseTableMPHF reads the MPHF section of a table whose header's
// incompatible feature bits are incompat: partitioned or single.
func ParseTableMPHF(b []byte, n uint64, incompat uint32) (*MPHF, error) {
	if incompat&FeaturePartitionedMPHF != 0 {
		return ParsePartitionedMPHF(b, n)
	}
	return ParseMPHF(b, n)
}
