package format

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"unsafe"
)

// A bucketed index (feature BUCKETED_SLOTS, version 1.3) finds a key's
// slot from its hash alone, with no pilot to read first. The keys are
// split into 2^k partitions by the top k bits of their hash, as in a
// partitioned MPHF; partition i has nb_i buckets of BucketEntries slots
// (one 64-byte cache line each), and a key may sit in either of two
// buckets of its partition, both computed from the hash rotated left by k
// bits (two-choice cuckoo hashing). A lookup loads both lines at once, so
// that their misses overlap, and then the record: two dependent reads
// where a perfect hash makes three (pilot, slot, record).
//
// The MPHF section then holds the bucket table, the SLOTS section the
// buckets:
//
//	u64 n         number of keys (equals the header's row count)
//	u64 k         partition bits, 1 to MaxPartitionBits
//	(P+1) x u64   bucket bases: 0, nondecreasing, total buckets last
//	(P+1) x u64   key bases: 0, nondecreasing, n last
//
// A slot holds the entry of SLOTS (record offset / 8, fingerprint), or
// EmptySlot. The slots of a bucket are filled from its first: a bucket's
// empty slots follow its full ones. A key is in its second bucket only
// when its first is full: a key goes to its second bucket only when its
// first has no room, and a bucket that is full stays full, since a key
// leaves a bucket only when another takes its slot.
const (
	// BucketEntries is the number of slots in a bucket.
	BucketEntries = 8
	// BucketSize is the size of a bucket in bytes: one cache line.
	BucketSize = 8 * BucketEntries
	// EmptySlot marks a slot that holds no key. No entry equals it: the
	// one that would (a record at offset MaxDataSize-8 whose key's
	// fingerprint is 0xFFFFFFFF) fails the build of its partition with a
	// seed error, and another seed gives the key another fingerprint.
	EmptySlot = ^uint64(0)
	// bucketsHeaderSize is n and k.
	bucketsHeaderSize = 16
	// bucketLoad is the share of a partition's slots that hold keys, in
	// 1/1000: partitions have ceil(n_i*1000/(bucketLoad*BucketEntries))
	// buckets to start with.
	bucketLoad = 900
	// maxKicks bounds the evictions a key's insertion may make before the
	// build of its partition starts again with more buckets.
	maxKicks = 1000
	// maxGrowths bounds those new starts: keys that do not fit after
	// them share their hashes (more than 2*BucketEntries keys of one
	// pair of buckets), which another seed mends.
	maxGrowths = 16
)

// Buckets is the bucket table of a bucketed index.
type Buckets struct {
	n     uint64
	k     uint
	parts []bucketPart
	// total is the number of buckets.
	total uint64
}

// bucketPart is one partition: its first bucket, its bucket count, its
// first key and its key count.
type bucketPart struct {
	base, nb   uint64
	keys, nkey uint64
}

// Len returns the number of keys.
func (b *Buckets) Len() uint64 { return b.n }

// Count returns the number of buckets; the SLOTS section is BucketSize
// times as many bytes.
func (b *Buckets) Count() uint64 { return b.total }

// Partitions returns the number of partitions.
func (b *Buckets) Partitions() int { return len(b.parts) }

// Partition returns partition i's first bucket, bucket count, first key
// (in the order of partitions) and key count.
func (b *Buckets) Partition(i int) (base, nb, keys, nkey uint64) {
	p := &b.parts[i]
	return p.base, p.nb, p.keys, p.nkey
}

// bucketChoices returns the two buckets, within a partition of nb buckets,
// of a key whose rotated hash is h.
func bucketChoices(h, nb uint64) (uint64, uint64) {
	b1, _ := bits.Mul64(h, nb)
	return b1, position(h, 0, nb)
}

// Choices returns the buckets (indexes into the SLOTS section, counted in
// buckets) where the key of hash h may be, and its partition; ok is false
// when its partition holds no key.
func (b *Buckets) Choices(h uint64) (b1, b2 uint64, part int, ok bool) {
	part = int(h >> (64 - b.k))
	p := &b.parts[part]
	if p.nb == 0 {
		return 0, 0, part, false
	}
	c1, c2 := bucketChoices(bits.RotateLeft64(h, int(b.k)), p.nb)
	return p.base + c1, p.base + c2, part, true
}

// BucketAddrs returns the addresses of the two buckets of h in slots, the
// SLOTS section, for a batch lookup to prefetch; both are 0 when h's
// partition holds no key.
func (b *Buckets) BucketAddrs(h uint64, slots []byte) (uintptr, uintptr) {
	b1, b2, _, ok := b.Choices(h)
	if !ok {
		return 0, 0
	}
	base := uintptr(unsafe.Pointer(unsafe.SliceData(slots)))
	return base + uintptr(b1*BucketSize), base + uintptr(b2*BucketSize)
}

// Size returns the size in bytes of the serialized bucket table.
func (b *Buckets) Size() int { return bucketsHeaderSize + 16*(len(b.parts)+1) }

// AppendTo appends the serialized bucket table.
func (b *Buckets) AppendTo(dst []byte) []byte {
	le := binary.LittleEndian
	dst = le.AppendUint64(dst, b.n)
	dst = le.AppendUint64(dst, uint64(b.k))
	for i := range b.parts {
		dst = le.AppendUint64(dst, b.parts[i].base)
	}
	dst = le.AppendUint64(dst, b.total)
	for i := range b.parts {
		dst = le.AppendUint64(dst, b.parts[i].keys)
	}
	return le.AppendUint64(dst, b.n)
}

// ParseBuckets reads a serialized bucket table and checks it against n
// keys and a SLOTS section of slotsLen bytes: bases that run from 0 to
// their totals without going back, no partition with more keys than
// slots, and SLOTS exactly the buckets' size.
func ParseBuckets(b []byte, n, slotsLen uint64) (*Buckets, error) {
	le := binary.LittleEndian
	if len(b) < bucketsHeaderSize {
		return nil, fmt.Errorf("bucket table of %d bytes is shorter than its %d-byte header", len(b), bucketsHeaderSize)
	}
	if got := le.Uint64(b); got != n {
		return nil, fmt.Errorf("bucket table holds %d keys, the header says %d rows", got, n)
	}
	k := le.Uint64(b[8:])
	if k < 1 || k > MaxPartitionBits {
		return nil, fmt.Errorf("bucket table has %d partition bits, want 1 to %d", k, MaxPartitionBits)
	}
	np := 1 << k
	if want := bucketsHeaderSize + 16*(np+1); len(b) != want {
		return nil, fmt.Errorf("bucket table is %d bytes, want %d for %d partitions", len(b), want, np)
	}
	bb, kb := b[bucketsHeaderSize:], b[bucketsHeaderSize+8*(np+1):]
	t := &Buckets{n: n, k: uint(k), parts: make([]bucketPart, np), total: le.Uint64(bb[8*np:])}
	if le.Uint64(bb) != 0 || le.Uint64(kb) != 0 || le.Uint64(kb[8*np:]) != n {
		return nil, fmt.Errorf("bucket table bases do not start at 0 or do not end at %d keys", n)
	}
	if t.total > slotsLen/BucketSize || slotsLen != BucketSize*t.total {
		return nil, fmt.Errorf("SLOTS section of %d bytes does not hold the %d buckets of the bucket table", slotsLen, t.total)
	}
	for i := range t.parts {
		base, next := le.Uint64(bb[8*i:]), le.Uint64(bb[8*i+8:])
		keys, nextKeys := le.Uint64(kb[8*i:]), le.Uint64(kb[8*i+8:])
		if next < base || nextKeys < keys {
			return nil, fmt.Errorf("bucket table partition %d starts after the next one", i)
		}
		nb, nkey := next-base, nextKeys-keys
		if nkey > nb*BucketEntries {
			return nil, fmt.Errorf("bucket table partition %d holds %d keys in %d buckets", i, nkey, nb)
		}
		t.parts[i] = bucketPart{base: base, nb: nb, keys: keys, nkey: nkey}
	}
	return t, nil
}

// errBucketPlace is returned by BuildBucketPartition when some key found
// no place in its buckets however many the partition had; the caller
// retries with another seed.
var errBucketPlace = errors.New("no place for a key in its buckets")

// errBucketData is returned by BuildBucketPartition for an entry equal
// to EmptySlot; the caller retries with another seed, under which the
// entry's fingerprint differs.
var errBucketData = errors.New("a record at the last offset a slot addresses")

// BuildBucketPartition places the entries of one partition, whose rotated
// hashes (PartitionOf) are hs and whose SLOTS entries are slots, in the
// fewest buckets it manages at the load bucketLoad, and returns the
// partition's buckets, BucketEntries slots each. The placement depends on
// the order of the entries alone: the same entries in the same order give
// the same buckets.
func BuildBucketPartition(hs, slots []uint64) ([]uint64, error) {
	n := uint64(len(hs))
	if n == 0 {
		return nil, nil
	}
	nb := (n*1000 + bucketLoad*BucketEntries - 1) / (bucketLoad * BucketEntries)
	for range maxGrowths {
		table, ok, err := placeBuckets(hs, slots, nb)
		if err != nil || ok {
			return table, err
		}
		nb += nb/64 + 1
	}
	return nil, errBucketPlace
}

// placeBuckets is one attempt of BuildBucketPartition with nb buckets;
// ok is false when some key found no place within maxKicks evictions.
func placeBuckets(hs, slots []uint64, nb uint64) ([]uint64, bool, error) {
	// who[s] is the index of the entry in slot s, or -1.
	who := make([]int32, nb*BucketEntries)
	for i := range who {
		who[i] = -1
	}
	rng := uint64(0x2545f4914f6cdd1d) ^ nb
	// put places entry e in bucket b if it has a free slot.
	put := func(e int32, b uint64) bool {
		s := who[b*BucketEntries : (b+1)*BucketEntries]
		for j := range s {
			if s[j] < 0 {
				s[j] = e
				return true
			}
		}
		return false
	}
	for i, h := range hs {
		if slots[i] == EmptySlot {
			return nil, false, errBucketData
		}
		e := int32(i)
		b1, b2 := bucketChoices(h, nb)
		if put(e, b1) || put(e, b2) {
			continue
		}
		// Evict: the entry takes a slot of one of its buckets, chosen at
		// random, and the entry it displaces moves to its other bucket.
		b := b1
		if rng&1 != 0 {
			b = b2
		}
		placed := false
		for range maxKicks {
			rng ^= rng << 13
			rng ^= rng >> 7
			rng ^= rng << 17
			j := b*BucketEntries + rng%BucketEntries
			e, who[j] = who[j], e
			c1, c2 := bucketChoices(hs[e], nb)
			b = c1
			if b == j/BucketEntries {
				b = c2
			}
			if put(e, b) {
				placed = true
				break
			}
		}
		if !placed {
			return nil, false, nil
		}
	}
	table := make([]uint64, len(who))
	for s, e := range who {
		if e < 0 {
			table[s] = EmptySlot
		} else {
			table[s] = slots[e]
		}
	}
	return table, true, nil
}

// NewBuckets assembles the bucket table of 2^k partitions from each
// partition's key count and bucket count, in order.
func NewBuckets(k uint, nkeys, nbuckets []uint64) (*Buckets, error) {
	if k < 1 || k > MaxPartitionBits || len(nkeys) != 1<<k || len(nbuckets) != len(nkeys) {
		return nil, fmt.Errorf("a bucket table of %d partitions with %d partition bits", len(nkeys), k)
	}
	t := &Buckets{k: k, parts: make([]bucketPart, len(nkeys))}
	for i := range nkeys {
		t.parts[i] = bucketPart{base: t.total, nb: nbuckets[i], keys: t.n, nkey: nkeys[i]}
		t.total += nbuckets[i]
		t.n += nkeys[i]
	}
	return t, nil
}
