package format

import (
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestBucketPartition places random keys and checks that every key is in
// exactly one slot of one of its two buckets, that no full slot follows
// an empty one, that the placement is the same on a second build, and
// that a large partition needs no more buckets than its load gives.
func TestBucketPartition(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{0, 1, 7, 8, 9, 17, 100, 5000, 400000} {
		hs := make([]uint64, n)
		vals := make([]uint64, n)
		for i := range hs {
			hs[i] = rng.Uint64()
			vals[i] = uint64(i)<<32 | uint64(i)
		}
		table, err := BuildBucketPartition(hs, vals)
		if err != nil {
			t.Fatalf("n=%d: %v", n, err)
		}
		if len(table)%BucketEntries != 0 || (n == 0) != (len(table) == 0) {
			t.Fatalf("n=%d: %d slots", n, len(table))
		}
		nb := uint64(len(table) / BucketEntries)
		if start := (uint64(n)*1000 + bucketLoad*BucketEntries - 1) / (bucketLoad * BucketEntries); n >= 5000 && nb > start+start/64+1 {
			t.Fatalf("n=%d: %d buckets, more than one growth past %d", n, nb, start)
		}
		at := make(map[uint64]uint64, n) // value -> bucket
		for b := uint64(0); b < nb; b++ {
			empty := false
			for _, v := range table[b*BucketEntries : (b+1)*BucketEntries] {
				if v == EmptySlot {
					empty = true
					continue
				}
				if empty {
					t.Fatalf("n=%d: bucket %d has a key after an empty slot", n, b)
				}
				if _, dup := at[v]; dup {
					t.Fatalf("n=%d: value %x in two slots", n, v)
				}
				at[v] = b
			}
		}
		if len(at) != n {
			t.Fatalf("n=%d: %d keys placed", n, len(at))
		}
		for i, h := range hs {
			b1, b2 := bucketChoices(h, nb)
			if b := at[vals[i]]; b != b1 && b != b2 {
				t.Fatalf("n=%d: key %d in bucket %d, its choices are %d and %d", n, i, b, b1, b2)
			}
		}
		again, err := BuildBucketPartition(hs, vals)
		if err != nil || !slices.Equal(again, table) {
			t.Fatalf("n=%d: a second build gives other buckets (%v)", n, err)
		}
	}
}

// TestBucketPartitionSharedHash checks the limit of keys with one hash:
// two buckets hold 16 of them, and a 17th is an error another seed mends,
// not a build that grows without end. An entry equal to EmptySlot is such
// an error too: another seed gives it another fingerprint.
func TestBucketPartitionSharedHash(t *testing.T) {
	for _, n := range []int{2 * BucketEntries, 2*BucketEntries + 1} {
		hs := make([]uint64, n)
		vals := make([]uint64, n)
		for i := range hs {
			hs[i] = 0x0123456789abcdef
			vals[i] = uint64(i)
		}
		_, err := BuildBucketPartition(hs, vals)
		if n == 2*BucketEntries && err != nil {
			t.Fatalf("%d keys of one hash: %v", n, err)
		}
		if n > 2*BucketEntries && (!errors.Is(err, errBucketPlace) || !IsSeedError(err)) {
			t.Fatalf("%d keys of one hash: %v, want a seed error", n, err)
		}
	}
	if _, err := BuildBucketPartition([]uint64{1}, []uint64{EmptySlot}); !errors.Is(err, errBucketData) || !IsSeedError(err) {
		t.Fatalf("an entry equal to EmptySlot: %v, want a seed error", err)
	}
}

// TestBucketsRoundTrip serializes a bucket table, parses it back and
// checks the parser's refusals.
func TestBucketsRoundTrip(t *testing.T) {
	const k = 3
	keys := []uint64{0, 5, 16, 1, 0, 9, 3, 8}
	nbs := []uint64{0, 1, 2, 1, 1, 2, 1, 1}
	bk, err := NewBuckets(k, keys, nbs)
	if err != nil {
		t.Fatal(err)
	}
	b := bk.AppendTo(nil)
	if len(b) != bk.Size() {
		t.Fatalf("AppendTo wrote %d bytes, Size says %d", len(b), bk.Size())
	}
	got, err := ParseBuckets(b, bk.Len(), BucketSize*bk.Count())
	if err != nil {
		t.Fatal(err)
	}
	for i := range 1 << k {
		base, nb, first, n := got.Partition(i)
		wbase, wnb, wfirst, wn := bk.Partition(i)
		if base != wbase || nb != wnb || first != wfirst || n != wn {
			t.Fatalf("partition %d: parsed %d %d %d %d, built %d %d %d %d", i, base, nb, first, n, wbase, wnb, wfirst, wn)
		}
	}
	for h := uint64(0); h < 1<<16; h++ {
		x := h * 0x9e3779b97f4a7c15
		b1, b2, part, ok := got.Choices(x)
		base, nb, _, _ := got.Partition(part)
		if ok != (nb > 0) || ok && (b1 < base || b1 >= base+nb || b2 < base || b2 >= base+nb) {
			t.Fatalf("Choices(%x) = %d, %d in partition %d of buckets %d+%d", x, b1, b2, part, base, nb)
		}
	}
	le := binary.LittleEndian
	for name, bad := range map[string]func([]byte) ([]byte, uint64, uint64){
		"other row count": func(b []byte) ([]byte, uint64, uint64) { return b, bk.Len() + 1, BucketSize * bk.Count() },
		"slots too short": func(b []byte) ([]byte, uint64, uint64) { return b, bk.Len(), BucketSize*bk.Count() - 8 },
		"cut":             func(b []byte) ([]byte, uint64, uint64) { return b[:len(b)-8], bk.Len(), BucketSize * bk.Count() },
		"no partition bits": func(b []byte) ([]byte, uint64, uint64) {
			le.PutUint64(b[8:], 0)
			return b, bk.Len(), BucketSize * bk.Count()
		},
		"bases going back": func(b []byte) ([]byte, uint64, uint64) {
			le.PutUint64(b[bucketsHeaderSize+8*2:], 9)
			return b, bk.Len(), BucketSize * bk.Count()
		},
		"more keys than slots": func(b []byte) ([]byte, uint64, uint64) {
			// Partition 1, of one bucket, takes 12 of partition 2's
			// keys: 17 keys in 8 slots.
			kb := bucketsHeaderSize + 8*((1<<k)+1)
			le.PutUint64(b[kb+8*2:], le.Uint64(b[kb+8*2:])+12)
			return b, bk.Len(), BucketSize * bk.Count()
		},
	} {
		c, n, sl := bad(slices.Clone(b))
		if _, err := ParseBuckets(c, n, sl); err == nil {
			t.Errorf("%s: parsed", name)
		}
	}
}

// FuzzParseBuckets parses arbitrary bucket tables: a table it accepts must
// give every hash buckets within its SLOTS.
func FuzzParseBuckets(f *testing.F) {
	bk, err := NewBuckets(2, []uint64{3, 0, 9, 1}, []uint64{1, 0, 2, 1})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(bk.AppendTo(nil), bk.Len(), BucketSize*bk.Count(), uint64(0))
	f.Add([]byte{}, uint64(0), uint64(0), uint64(1))
	f.Fuzz(func(t *testing.T, b []byte, n, slotsLen, h uint64) {
		got, err := ParseBuckets(b, n, slotsLen)
		if err != nil {
			return
		}
		for i := range uint64(64) {
			x := (h + i) * 0x9e3779b97f4a7c15
			b1, b2, _, ok := got.Choices(x)
			if ok && (b1 >= got.Count() || b2 >= got.Count() || BucketSize*(max(b1, b2)+1) > slotsLen) {
				t.Fatalf("Choices(%x) = %d, %d past the %d buckets", x, b1, b2, got.Count())
			}
		}
	})
}
