package syncbuf_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/lutkit/lutkit/internal/syncbuf"
)

// TestConcurrentWrites: lines written from many goroutines all arrive
// whole (run with -race).
func TestConcurrentWrites(t *testing.T) {
	var b syncbuf.Buffer
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 100 {
				fmt.Fprintf(&b, "g%d-%d\n", g, i)
			}
		})
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != 800 {
		t.Fatalf("%d lines, want 800", len(lines))
	}
	seen := map[string]bool{}
	for _, l := range lines {
		seen[l] = true
	}
	if len(seen) != 800 || b.Len() != len(b.String()) {
		t.Fatalf("%d distinct lines of 800, Len %d", len(seen), b.Len())
	}
}

func ExampleBuffer() {
	var b syncbuf.Buffer
	fmt.Fprintln(&b, "ready")
	fmt.Print(b.String())
	// Output: ready
}
