// Package seqtally counts numbered events as a test's receiver reads
// them: how many distinct numbers arrived, how many arrived more than
// once, and which are missing. It is safe for concurrent use, so that a
// receiver's connection goroutines can share one Tally.
package seqtally

import "sync"

// Tally counts the times each number was seen.
type Tally struct {
	mu   sync.Mutex
	seen map[int]int
}

// Add counts one arrival of seq.
func (t *Tally) Add(seq int) {
	t.mu.Lock()
	if t.seen == nil {
		t.seen = map[int]int{}
	}
	t.seen[seq]++
	t.mu.Unlock()
}

// Seen returns how many times seq arrived.
func (t *Tally) Seen(seq int) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.seen[seq]
}

// Counts returns the distinct numbers that arrived and the arrivals
// beyond the first of each (the duplicates).
func (t *Tally) Counts() (distinct, dups int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, n := range t.seen {
		distinct++
		dups += n - 1
	}
	return distinct, dups
}

// Missing returns the numbers of 0 to n-1 that never arrived, in order.
func (t *Tally) Missing(n int) []int {
	t.mu.Lock()
	defer t.mu.Unlock()
	var miss []int
	for i := range n {
		if t.seen[i] == 0 {
			miss = append(miss, i)
		}
	}
	return miss
}
