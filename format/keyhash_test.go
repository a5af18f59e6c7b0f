package format

import (
	"math/rand/v2"
	"testing"
)

// TestKeyHasher checks KeyHasher against HashKey for every length up to
// past XXH3's 240-byte path, with seeds that exercise every bit.
func TestKeyHasher(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	seeds := []uint64{0, 1, 0xffffffff, 0x100000000, ^uint64(0), 0x8000000000000000}
	for range 20 {
		seeds = append(seeds, rng.Uint64())
	}
	buf := make([]byte, 300)
	for _, seed := range seeds {
		kh := NewKeyHasher(seed)
		for l := 0; l <= len(buf); l++ {
			for range 4 {
				for i := range buf[:l] {
					buf[i] = byte(rng.Uint32())
				}
				key := buf[:l]
				if got, want := kh.Hash(key), HashKey(key, seed); got != want {
					t.Fatalf("seed %#x, key %x: Hash %#x, HashKey %#x", seed, key, got, want)
				}
			}
		}
	}
}

// FuzzKeyHasher checks KeyHasher against HashKey for arbitrary keys and
// seeds.
func FuzzKeyHasher(f *testing.F) {
	f.Add([]byte(""), uint64(0))
	f.Add([]byte("1"), uint64(7))
	f.Add([]byte("1234567"), uint64(1<<40))
	f.Add([]byte("someone@example.com"), ^uint64(0))
	f.Fuzz(func(t *testing.T, key []byte, seed uint64) {
		kh := NewKeyHasher(seed)
		if got, want := kh.Hash(key), HashKey(key, seed); got != want {
			t.Fatalf("seed %#x, key %x: Hash %#x, HashKey %#x", seed, key, got, want)
		}
	})
}
