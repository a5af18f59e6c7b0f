package format

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"
)

// buildPartitioned builds a partitioned function of 2^k partitions over
// hashes.
func buildPartitioned(t testing.TB, hashes []uint64, k uint) *MPHF {
	t.Helper()
	byPart := make([][]uint64, 1<<k)
	for _, h := range hashes {
		p, hp := PartitionOf(h, k)
		byPart[p] = append(byPart[p], hp)
	}
	parts := make([]*MPHF, len(byPart))
	for i, hs := range byPart {
		f, err := BuildMPHF(hs)
		if err != nil {
			t.Fatal(err)
		}
		parts[i] = f
	}
	f, err := NewPartitionedMPHF(k, parts)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestPartitionedMPHF(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		n int
		k uint
	}{{0, 1}, {1, 1}, {5, 3}, {1000, 4}, {50000, 8}} {
		hashes := make([]uint64, tc.n)
		for i := range hashes {
			hashes[i] = rng.Uint64()
		}
		built := buildPartitioned(t, append([]uint64(nil), hashes...), tc.k)
		b := built.AppendTo(nil)
		if len(b) != built.Size() {
			t.Fatalf("n=%d: AppendTo wrote %d bytes, Size says %d", tc.n, len(b), built.Size())
		}
		f, err := ParsePartitionedMPHF(b, uint64(tc.n))
		if err != nil {
			t.Fatalf("n=%d: %v", tc.n, err)
		}
		seen := make([]bool, tc.n)
		for _, h := range hashes {
			i := f.Index(h)
			if i >= uint64(tc.n) || seen[i] {
				t.Fatalf("n=%d: Index(%x) = %d: out of range or taken", tc.n, h, i)
			}
			seen[i] = true
			if got := built.Index(h); got != i {
				t.Fatalf("n=%d: the built and the parsed function disagree", tc.n)
			}
		}
		if tc.n > 0 {
			for range 1000 {
				if i := f.Index(rng.Uint64()); i >= uint64(tc.n) {
					t.Fatalf("n=%d: Index of an unknown hash = %d", tc.n, i)
				}
			}
		}
		if _, err := ParsePartitionedMPHF(b, uint64(tc.n+1)); err == nil {
			t.Fatalf("n=%d: parsed with a wrong key count", tc.n)
		}
		if _, err := ParsePartitionedMPHF(b[:len(b)-1], uint64(tc.n)); err == nil && len(b) > 0 {
			t.Fatalf("n=%d: parsed a truncated section", tc.n)
		}
	}
}

func TestParsePartitionedMPHFRejects(t *testing.T) {
	hashes := []uint64{1 << 63, 3 << 62, 5, 77 << 40}
	b := buildPartitioned(t, hashes, 1).AppendTo(nil)
	bad := func(what string, mutate func([]byte)) {
		c := append([]byte(nil), b...)
		mutate(c)
		if _, err := ParsePartitionedMPHF(c, 4); err == nil {
			t.Errorf("%s: parsed", what)
		}
	}
	bad("zero partition bits", func(c []byte) { binary.LittleEndian.PutUint64(c[8:], 0) })
	bad("too many partition bits", func(c []byte) { binary.LittleEndian.PutUint64(c[8:], 17) })
	bad("first base not 0", func(c []byte) { binary.LittleEndian.PutUint64(c[16:], 1) })
	bad("bases out of order", func(c []byte) { binary.LittleEndian.PutUint64(c[24:], 9) })
	if _, err := ParsePartitionedMPHF(b[:20], 4); err == nil {
		t.Error("parsed a section cut in its bases")
	}
}

// FuzzParsePartitionedMPHF checks that any bytes either fail to parse or
// give a function whose every result is a slot below n.
func FuzzParsePartitionedMPHF(f *testing.F) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{1, 3, 20} {
		hashes := make([]uint64, n)
		for i := range hashes {
			hashes[i] = rng.Uint64()
		}
		f.Add(buildPartitioned(f, hashes, 1+uint(n%3)).AppendTo(nil), uint16(n), uint64(1))
	}
	f.Fuzz(func(t *testing.T, b []byte, n uint16, h uint64) {
		m, err := ParsePartitionedMPHF(b, uint64(n))
		if err != nil {
			return
		}
		for i := range uint64(64) {
			if got := m.Index(h + i*0x9e3779b97f4a7c15); n > 0 && got >= uint64(n) {
				t.Fatalf("Index = %d, n = %d", got, n)
			}
		}
	})
}

// BenchmarkMPHFIndexPartitioned is BenchmarkMPHFIndex's loop over the same
// 2,000,000 hashes with the single function and with a partitioned one of
// 256 partitions, in one run.
func BenchmarkMPHFIndexPartitioned(b *testing.B) {
	const n = 2_000_000
	keys := randomHashes(n, 5)
	single, err := BuildMPHF(append([]uint64(nil), keys...))
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		f    *MPHF
	}{{"single", single}, {"partitioned", buildPartitioned(b, append([]uint64(nil), keys...), 8)}} {
		b.Run(c.name, func(b *testing.B) {
			i := 0
			var sink uint64
			for b.Loop() {
				sink += c.f.Index(keys[i])
				i++
				if i == n {
					i = 0
				}
			}
			_ = sink
		})
	}
}

// randomHashes returns n random hashes drawn from seed.
func randomHashes(n int, seed uint64) []uint64 {
	r := rand.New(rand.NewPCG(seed, seed+1))
	hashes := make([]uint64, n)
	for i := range hashes {
		hashes[i] = r.Uint64()
	}
	return hashes
}
