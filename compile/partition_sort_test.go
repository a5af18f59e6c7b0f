package compile

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestReadSortedOrder spills random entries and checks that readSorted
// gives every partition in the order slices.SortFunc(compareEntries)
// gives it: partitions empty, of one entry and of thousands; hashes
// repeated in runs longer than insertionRun; hashes equal in the bucket
// bits and different below; lines out of order, as after a respill.
func TestReadSortedOrder(t *testing.T) {
	for _, n := range []int{0, 1, 300, 5000, 200000} {
		t.Run(fmt.Sprintf("entries=%d", n), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(n), 11))
			s, err := newSpiller(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			defer s.remove()
			var hot []uint64 // hashes given again
			lines := rng.Perm(n)
			for i := range n {
				h := rng.Uint64()
				switch r := rng.IntN(20); {
				case r == 0 && len(hot) > 0:
					h = hot[rng.IntN(len(hot))]
					if rng.IntN(2) == 0 {
						h = hot[0] // one hash in a run longer than insertionRun
					}
				case r == 1 && len(hot) > 0:
					h = hot[rng.IntN(len(hot))] ^ uint64(rng.IntN(1<<20)) // same bucket, other hash
				case r == 2:
					h &^= 1<<56 - 1 // a few partitions with many entries
				}
				if i < 3 || rng.IntN(500) == 0 {
					hot = append(hot, h)
				}
				if err := s.add(entry{hash: h, off: uint64(i) * 40, at: int64(lines[i])}); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.finish(); err != nil {
				t.Fatal(err)
			}
			var b partBuffers
			var want []entry
			longest := 0
			for i := range spillParts {
				if want, err = s.read(i, want); err != nil {
					t.Fatal(err)
				}
				slices.SortFunc(want, compareEntries)
				if err := s.readSorted(i, &b); err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(b.entries, want) {
					t.Fatalf("partition %d: readSorted gave another order than slices.SortFunc (%d entries)", i, len(want))
				}
				for j := 0; j < len(want); {
					k := j
					for k < len(want) && want[k].hash == want[j].hash {
						k++
					}
					longest = max(longest, k-j)
					j = k
				}
			}
			if n >= 5000 && longest <= insertionRun {
				t.Fatalf("the longest run of one hash is %d entries, not above insertionRun (%d)", longest, insertionRun)
			}
		})
	}
}
