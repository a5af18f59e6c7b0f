package format

import (
	"encoding/binary"
	"math/bits"

	"github.com/zeebo/xxh3"
)

// KeyHasher computes HashKey for one seed, with the parts of XXH3-64 that
// depend only on the seed worked out once. Keys of up to 16 bytes (most
// lookup keys: identifiers, short names) are hashed here directly, without
// going through XXH3's general length dispatch; longer keys are passed to
// xxh3.HashSeed. Hash(key) equals HashKey(key, seed) for every key: the
// files depend on it.
type KeyHasher struct {
	seed  uint64
	empty uint64 // the hash of the empty key
	c1    uint64 // 1 to 3 bytes
	c4    uint64 // 4 to 8 bytes
	c9lo  uint64 // 9 to 16 bytes, first word
	c9hi  uint64 // 9 to 16 bytes, last word
}

// Words of XXH3's default secret (kSecret) that the short-input paths use,
// named by their byte offset in it.
const (
	secret32At0  = 0xbe4ba423
	secret32At4  = 0x396cfeb8
	secret64At8  = 0x1cad21f72c81017c
	secret64At16 = 0xdb979083e96dd4de
	secret64At24 = 0x1f67b3b7a4a44072
	secret64At32 = 0x78e5c0cc4ee679cb
	secret64At40 = 0x2172ffcc7dd05a82
	secret64At48 = 0x8e2443f7744608b8
	secret64At56 = 0x4c263a81e69035e0
	secret64At64 = 0xcb00c391bb52283c
)

// NewKeyHasher returns the KeyHasher of a table's hash seed.
func NewKeyHasher(seed uint64) KeyHasher {
	s4 := seed ^ uint64(bits.ReverseBytes32(uint32(seed)))<<32
	return KeyHasher{
		seed:  seed,
		empty: avalancheSmall(seed ^ secret64At56 ^ secret64At64),
		c1:    uint64(secret32At0^secret32At4) + seed,
		c4:    (secret64At8 ^ secret64At16) - s4,
		c9lo:  (secret64At24 ^ secret64At32) + seed,
		c9hi:  (secret64At40 ^ secret64At48) - seed,
	}
}

// Hash returns HashKey(key, seed) for the hasher's seed.
func (k *KeyHasher) Hash(key []byte) uint64 {
	switch l := len(key); {
	case l >= 4 && l <= 8:
		return k.hash4to8(key)
	case l > 8 && l <= 16:
		return k.hash9to16(key)
	case l > 0 && l < 4:
		x := uint64(key[0])<<16 | uint64(key[l>>1])<<24 | uint64(key[l-1]) | uint64(l)<<8
		return avalancheSmall(x ^ k.c1)
	case l == 0:
		return k.empty
	}
	return xxh3.HashSeed(key, k.seed)
}

// hash4to8 is Hash for a key of 4 to 8 bytes (small enough to be inlined
// in Finder.Find).
func (k *KeyHasher) hash4to8(key []byte) uint64 {
	le := binary.LittleEndian
	l := len(key)
	x := uint64(le.Uint32(key[l-4:])) + uint64(le.Uint32(key))<<32
	return rrmxmx(x^k.c4, uint64(l))
}

// hash9to16 is Hash for a key of 9 to 16 bytes.
func (k *KeyHasher) hash9to16(key []byte) uint64 {
	le := binary.LittleEndian
	l := len(key)
	lo := le.Uint64(key) ^ k.c9lo
	hi := le.Uint64(key[l-8:]) ^ k.c9hi
	m1, m0 := bits.Mul64(lo, hi)
	return avalanche(uint64(l) + bits.ReverseBytes64(lo) + hi + (m1 ^ m0))
}

func avalancheSmall(x uint64) uint64 {
	x ^= x >> 33
	x *= 14029467366897019727
	x ^= x >> 29
	x *= 1609587929392839161
	x ^= x >> 32
	return x
}

func avalanche(x uint64) uint64 {
	x ^= x >> 37
	x *= 0x165667919e3779f9
	x ^= x >> 32
	return x
}

func rrmxmx(x, l uint64) uint64 {
	x ^= bits.RotateLeft64(x, 49) ^ bits.RotateLeft64(x, 24)
	x *= 0x9fb21c651e98df25
	x ^= (x >> 35) + l
	x *= 0x9fb21c651e98df25
	x ^= x >> 28
	return x
}
