package retry

import (
	"testing"
	"time"
)

// TestBackoff: each wait is within [d/2, d] of the doubled, capped base, and
// the waits are not all the same (jitter).
func TestBackoff(t *testing.T) {
	base, limit := 10*time.Millisecond, time.Second
	seen := map[time.Duration]bool{}
	for attempt := range 40 {
		want := min(base<<min(attempt, 30), limit)
		if attempt > 30 {
			want = limit
		}
		for range 20 {
			d := Backoff(base, limit, attempt)
			if d < want/2 || d > want {
				t.Fatalf("attempt %d: %v, want in [%v, %v]", attempt, d, want/2, want)
			}
			seen[d] = true
		}
	}
	if len(seen) < 100 {
		t.Errorf("%d distinct waits in 800: no jitter", len(seen))
	}
	if d := Backoff(0, limit, 3); d != 0 {
		t.Errorf("zero base: %v", d)
	}
}
