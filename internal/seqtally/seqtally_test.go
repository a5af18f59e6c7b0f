package seqtally

import (
	"slices"
	"sync"
	"testing"
)

func TestTally(t *testing.T) {
	var tl Tally
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 1000 {
				if i%10 != 3 || g == 0 {
					tl.Add(i)
				}
			}
		}()
	}
	wg.Wait()
	tl.Add(5000)
	distinct, dups := tl.Counts()
	if distinct != 1001 || dups != 3*900 {
		t.Fatalf("distinct %d, dups %d; want 1001, 2700", distinct, dups)
	}
	if tl.Seen(3) != 1 || tl.Seen(4) != 4 || tl.Seen(-1) != 0 {
		t.Fatalf("Seen(3) %d, Seen(4) %d", tl.Seen(3), tl.Seen(4))
	}
	if miss := tl.Missing(1002); !slices.Equal(miss, []int{1000, 1001}) {
		t.Fatalf("Missing(1002) = %v", miss)
	}
}
