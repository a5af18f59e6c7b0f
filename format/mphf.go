package format

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"unsafe"
)

// The minimal perfect hash (MPHF) maps each of n distinct 64-bit key hashes
// to a distinct slot in [0, n). It is in the PTHash family ("hash and
// displace"):
//
//   - keys are split into nb buckets by the high bits of their hash:
//     bucket(h) = hi64(h * nb), so buckets hold about Lambda keys each;
//   - each bucket has a 16-bit pilot p, chosen at build time so that the
//     positions pos(h, p) = hi64(mix(h ^ pilotHash(p)) * m) of its keys land
//     on free slots of a table of m = n/Alpha slots;
//   - positions at or beyond n (about 1% of keys) are remapped to the free
//     slots below n through a remap table, which makes the function minimal.
//
// Evaluation is a multiply, a pilot load (the pilots are 2 bytes per bucket,
// about 0.57 bytes per key, so they stay in cache), a mix and a multiply.
//
// The constants below are part of the durable format and must not change.
const (
	mphfLambda = 3.5  // average keys per bucket
	mphfAlpha  = 0.99 // load factor of the intermediate table
	pilotMul   = 0x9e3779b97f4a7c15
	mixMul1    = 0xff51afd7ed558ccd
	mixMul2    = 0xc4ceb9fe1a85ec53

	// MPHFHeaderSize is the size of the fixed part of the MPHF section:
	// n, m, nb and the remap count, each a little-endian uint64.
	MPHFHeaderSize = 32
)

// ErrDuplicateHash is returned by BuildMPHF when two keys share a 64-bit
// hash. With distinct keys this is a 1-in-2^64 event per pair; the caller
// retries with another seed.
var ErrDuplicateHash = errors.New("two keys have the same 64-bit hash")

// errPilotSearch is returned when some bucket found no pilot; the caller
// retries with another seed.
var errPilotSearch = errors.New("no pilot found for a bucket")

// MPHF is a minimal perfect hash over a fixed set of key hashes. Its
// serialized form is the MPHF section of a table; Index reads it in place.
type MPHF struct {
	n, m, nb uint64
	pilots   []byte // nb little-endian uint16
	remap    []byte // (m-n) little-endian uint32

	// A partitioned function (mphf_partitioned.go) has 2^k partitions,
	// each a function of its own over the rotated hashes of its keys,
	// whose slots start at base; n is their sum and m, nb, pilots and
	// remap are unused.
	parts []MPHF
	base  uint64
	k     uint
}

// Len returns the number of keys.
func (f *MPHF) Len() uint64 { return f.n }

func mphfSizes(n uint64) (m, nb uint64) {
	if n == 0 {
		return 0, 0
	}
	m = uint64(float64(n)/mphfAlpha) + 1
	nb = uint64(float64(n)/mphfLambda) + 1
	return m, nb
}

func pilotHash(p uint16) uint64 { return (uint64(p) + 1) * pilotMul }

// position maps a key hash and a pilot to a slot of the m-slot table.
func position(h uint64, p uint16, m uint64) uint64 {
	x := h ^ pilotHash(p)
	x ^= x >> 33
	x *= mixMul1
	x ^= x >> 29
	x *= mixMul2
	x ^= x >> 32
	hi, _ := bits.Mul64(x, m)
	return hi
}

// Bucket returns the bucket of a key hash. It is exposed so that a batch
// lookup can prefetch pilots stage by stage.
func (f *MPHF) Bucket(h uint64) uint64 {
	b, _ := bits.Mul64(h, f.nb)
	return b
}

// Index returns the slot of a key hash. For a hash that was not in the
// build set it returns some slot in [0, n) (the caller compares the key);
// for an empty function it returns 0.
func (f *MPHF) Index(h uint64) uint64 {
	if f.n == 0 {
		return 0
	}
	if f.parts != nil {
		return f.partIndex(h)
	}
	pos := position(h, f.pilot(h), f.m)
	if pos >= f.n {
		return f.remapped(pos)
	}
	return pos
}

// pilot returns the pilot of h's bucket (the function must not be empty).
func (f *MPHF) pilot(h uint64) uint16 {
	b, _ := bits.Mul64(h, f.nb)
	pl := f.pilots[2*b : 2*b+2]
	return uint16(pl[0]) | uint16(pl[1])<<8
}

// remapped returns the slot below n that position pos, at or beyond n, is
// remapped to (about 1% of keys).
func (f *MPHF) remapped(pos uint64) uint64 {
	i := 4 * (pos - f.n)
	return uint64(binary.LittleEndian.Uint32(f.remap[i : i+4]))
}

// PilotAddr returns the address of the pilot Index reads for h, for a
// batch lookup to prefetch (0 for an empty function).
func (f *MPHF) PilotAddr(h uint64) uintptr {
	if f.n == 0 {
		return 0
	}
	if f.parts != nil {
		f, h = f.partition(h)
		if f.n == 0 {
			return 0
		}
	}
	b, _ := bits.Mul64(h, f.nb)
	return uintptr(unsafe.Pointer(unsafe.SliceData(f.pilots))) + uintptr(2*b)
}

// BuildMPHF builds a minimal perfect hash over hashes, which must be
// distinct. It sorts hashes in place.
func BuildMPHF(hashes []uint64) (*MPHF, error) {
	n := uint64(len(hashes))
	m, nb := mphfSizes(n)
	f := &MPHF{n: n, m: m, nb: nb, pilots: make([]byte, 2*nb), remap: make([]byte, 4*(m-n))}
	if n == 0 {
		return f, nil
	}
	// Sorting by hash groups each bucket's keys together, since bucket(h)
	// is monotonic in h, and puts equal hashes next to each other.
	slices.Sort(hashes)
	for i := 1; i < len(hashes); i++ {
		if hashes[i] == hashes[i-1] {
			return nil, ErrDuplicateHash
		}
	}
	// start[b] is the index in hashes of bucket b's first key.
	start := make([]uint32, nb+1)
	{
		b := uint64(0)
		for i, h := range hashes {
			hb := f.Bucket(h)
			for b < hb {
				b++
				start[b] = uint32(i)
			}
		}
		for b < nb {
			b++
			start[b] = uint32(n)
		}
	}
	// Place the largest buckets first (ties in bucket order, for
	// determinism) with a counting sort by size.
	maxSize := 0
	for b := uint64(0); b < nb; b++ {
		maxSize = max(maxSize, int(start[b+1]-start[b]))
	}
	bySize := make([]uint32, 0, nb)
	{
		counts := make([]int, maxSize+2)
		for b := uint64(0); b < nb; b++ {
			counts[maxSize-int(start[b+1]-start[b])+1]++
		}
		for i := 1; i < len(counts); i++ {
			counts[i] += counts[i-1]
		}
		bySize = bySize[:nb]
		for b := uint64(0); b < nb; b++ {
			s := maxSize - int(start[b+1]-start[b])
			bySize[counts[s]] = uint32(b)
			counts[s]++
		}
	}
	taken := make([]uint64, (m+63)/64)
	var pos [64]uint64
	for _, b := range bySize {
		keys := hashes[start[b]:start[b+1]]
		if len(keys) == 0 {
			break // sizes are descending: the rest are empty too
		}
		if len(keys) > len(pos) {
			return nil, fmt.Errorf("bucket of %d keys: %w", len(keys), errPilotSearch)
		}
		found := false
		for p := 0; p <= 0xffff && !found; p++ {
			found = true
			for i, h := range keys {
				q := position(h, uint16(p), m)
				if taken[q/64]&(1<<(q%64)) != 0 || slices.Contains(pos[:i], q) {
					found = false
					break
				}
				pos[i] = q
			}
			if found {
				for _, q := range pos[:len(keys)] {
					taken[q/64] |= 1 << (q % 64)
				}
				binary.LittleEndian.PutUint16(f.pilots[2*b:], uint16(p))
			}
		}
		if !found {
			return nil, errPilotSearch
		}
	}
	// Remap the taken positions >= n onto the free positions < n, in
	// ascending order on both sides.
	free := uint64(0)
	for q := n; q < m; q++ {
		if taken[q/64]&(1<<(q%64)) == 0 {
			continue
		}
		for taken[free/64]&(1<<(free%64)) != 0 {
			free++
		}
		binary.LittleEndian.PutUint32(f.remap[4*(q-n):], uint32(free))
		free++
	}
	return f, nil
}

// BuildMPHFRetry builds a minimal perfect hash, rehashing with the next
// seed when a build fails on a seed-dependent event (two equal hashes, or
// no pilot for a bucket). hash returns the hashes of all keys under a seed.
// It returns the seed that worked.
func BuildMPHFRetry(seed uint64, hash func(seed uint64) []uint64) (*MPHF, uint64, error) {
	var lastErr error
	for try := 0; try < 8; try++ {
		f, err := BuildMPHF(hash(seed))
		if err == nil {
			return f, seed, nil
		}
		lastErr = err
		seed++
	}
	return nil, 0, fmt.Errorf("building the perfect hash: %w", lastErr)
}

// Size returns the size in bytes of the serialized function.
func (f *MPHF) Size() int {
	if f.parts != nil {
		return f.partitionedSize()
	}
	return MPHFHeaderSize + align8(len(f.pilots)) + len(f.remap)
}

// AppendTo appends the serialized function: n, m, nb and the remap count as
// little-endian uint64s, the pilots padded to 8 bytes, the remap table (a
// partitioned function: see appendPartitioned).
func (f *MPHF) AppendTo(dst []byte) []byte {
	if f.parts != nil {
		return f.appendPartitioned(dst)
	}
	dst = binary.LittleEndian.AppendUint64(dst, f.n)
	dst = binary.LittleEndian.AppendUint64(dst, f.m)
	dst = binary.LittleEndian.AppendUint64(dst, f.nb)
	dst = binary.LittleEndian.AppendUint64(dst, f.m-f.n)
	dst = append(dst, f.pilots...)
	dst = append(dst, make([]byte, align8(len(f.pilots))-len(f.pilots))...)
	return append(dst, f.remap...)
}

// ParseMPHF reads a serialized function in place (the result aliases b)
// and checks that it is consistent with n keys. Remap entries are checked
// to be below n, so Index never returns a slot out of range.
func ParseMPHF(b []byte, n uint64) (*MPHF, error) {
	if len(b) < MPHFHeaderSize {
		return nil, fmt.Errorf("MPHF section of %d bytes is shorter than its %d-byte header", len(b), MPHFHeaderSize)
	}
	f := &MPHF{
		n:  binary.LittleEndian.Uint64(b[0:]),
		m:  binary.LittleEndian.Uint64(b[8:]),
		nb: binary.LittleEndian.Uint64(b[16:]),
	}
	nremap := binary.LittleEndian.Uint64(b[24:])
	if f.n != n {
		return nil, fmt.Errorf("MPHF holds %d keys, the header says %d rows", f.n, n)
	}
	wantM, wantNB := mphfSizes(n)
	if f.m != wantM || f.nb != wantNB || nremap != f.m-f.n {
		return nil, fmt.Errorf("MPHF parameters (m=%d, buckets=%d, remap=%d) do not fit %d keys", f.m, f.nb, nremap, n)
	}
	pl := align8(int(2 * f.nb))
	if uint64(len(b)) != MPHFHeaderSize+uint64(pl)+4*nremap {
		return nil, fmt.Errorf("MPHF section is %d bytes, want %d", len(b), MPHFHeaderSize+uint64(pl)+4*nremap)
	}
	f.pilots = b[MPHFHeaderSize : MPHFHeaderSize+2*f.nb]
	f.remap = b[MPHFHeaderSize+uint64(pl):]
	for i := uint64(0); i < nremap; i++ {
		if uint64(binary.LittleEndian.Uint32(f.remap[4*i:])) >= n {
			return nil, fmt.Errorf("MPHF remap entry %d points past the last slot", i)
		}
	}
	return f, nil
}

func align8(n int) int { return (n + 7) &^ 7 }

// IsSeedError reports whether err is a failure of BuildMPHF that another
// hash seed avoids (two equal hashes, no pilot for a bucket), or of
// BuildBucketPartition (no place for a key in its buckets, an entry equal
// to EmptySlot).
func IsSeedError(err error) bool {
	return errors.Is(err, ErrDuplicateHash) || errors.Is(err, errPilotSearch) || errors.Is(err, errBucketPlace) || errors.Is(err, errBucketData)
}
