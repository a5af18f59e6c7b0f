package format

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// checkBijection builds an MPHF over hashes and checks that it maps them
// one-to-one onto [0, n), also after a serialization round trip.
func checkBijection(t testing.TB, hashes []uint64) {
	t.Helper()
	keys := append([]uint64(nil), hashes...)
	f, err := BuildMPHF(hashes)
	if err != nil {
		t.Fatalf("BuildMPHF(%d keys): %v", len(keys), err)
	}
	g, err := ParseMPHF(f.AppendTo(nil), uint64(len(keys)))
	if err != nil {
		t.Fatalf("ParseMPHF: %v", err)
	}
	if len(f.AppendTo(nil)) != f.Size() {
		t.Fatalf("Size %d != serialized %d", f.Size(), len(f.AppendTo(nil)))
	}
	seen := make([]bool, len(keys))
	for _, h := range keys {
		i := g.Index(h)
		if i >= uint64(len(keys)) {
			t.Fatalf("Index(%#x) = %d, out of [0,%d)", h, i, len(keys))
		}
		if seen[i] {
			t.Fatalf("Index(%#x) = %d, already taken: not injective", h, i)
		}
		seen[i] = true
		if f.Index(h) != i {
			t.Fatalf("parsed and built functions differ at %#x", h)
		}
	}
}

func TestMPHFSmall(t *testing.T) {
	for n := 0; n <= 64; n++ {
		hashes := make([]uint64, n)
		for i := range hashes {
			hashes[i] = HashKey([]byte(fmt.Sprint(i)), 1)
		}
		checkBijection(t, hashes)
	}
}

func TestMPHFRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{100, 1000, 12345, 200000} {
		hashes := make([]uint64, n)
		for i := range hashes {
			hashes[i] = r.Uint64()
		}
		checkBijection(t, hashes)
	}
}

// Keys sharing long prefixes, or differing in one bit, must still hash
// apart; hashes that are nearly equal (adjacent integers) must spread.
func TestMPHFAdversarial(t *testing.T) {
	prefix := make([]byte, 4096)
	var hashes []uint64
	for i := 0; i < 5000; i++ {
		k := append(prefix[:len(prefix):len(prefix)], fmt.Sprint(i)...)
		hashes = append(hashes, HashKey(k, 7))
	}
	checkBijection(t, hashes)

	// Keys that are consecutive integers in binary, and keys differing in
	// one bit: the hash must spread them over the buckets.
	var seq []uint64
	for i := uint64(0); i < 50000; i++ {
		var k [8]byte
		binary.LittleEndian.PutUint64(k[:], i)
		seq = append(seq, HashKey(k[:], 0))
		var one [64]byte
		one[i%64] = byte(1 << (i / 64 % 8))
		one[(i/512)%64] |= 0x80
		if i < 4096 {
			seq = append(seq, HashKey(one[:], 0))
		}
	}
	// Drop repeats of the single-bit keys (the generator repeats some).
	slices.Sort(seq)
	seq = slices.Compact(seq)
	checkBijection(t, seq)
}

func TestMPHFDuplicateHash(t *testing.T) {
	if _, err := BuildMPHF([]uint64{5, 9, 5}); !errors.Is(err, ErrDuplicateHash) {
		t.Fatalf("got %v, want ErrDuplicateHash", err)
	}
}

func TestParseMPHFRejects(t *testing.T) {
	hashes := []uint64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	f, _ := BuildMPHF(hashes)
	b := f.AppendTo(nil)
	if _, err := ParseMPHF(b, 11); err == nil {
		t.Fatal("wrong key count accepted")
	}
	if _, err := ParseMPHF(b[:len(b)-1], 10); err == nil {
		t.Fatal("truncated section accepted")
	}
	if _, err := ParseMPHF(b[:10], 10); err == nil {
		t.Fatal("short header accepted")
	}
}

func BenchmarkMPHFBuild(b *testing.B) {
	for _, n := range []int{2_000_000, 10_000_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			if testing.Short() && n > 2_000_000 {
				b.Skip("short")
			}
			r := rand.New(rand.NewPCG(3, 4))
			src := make([]uint64, n)
			for i := range src {
				src[i] = r.Uint64()
			}
			hashes := make([]uint64, n)
			for b.Loop() {
				copy(hashes, src)
				f, err := BuildMPHF(hashes)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(f.Size()*8)/float64(n), "bits/key")
			}
		})
	}
}

func BenchmarkMPHFIndex(b *testing.B) {
	const n = 2_000_000
	hashes := randomHashes(n, 5)
	keys := append([]uint64(nil), hashes...)
	f, err := BuildMPHF(hashes)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	i := 0
	var sink uint64
	for b.Loop() {
		sink += f.Index(keys[i])
		i++
		if i == n {
			i = 0
		}
	}
	_ = sink
}
