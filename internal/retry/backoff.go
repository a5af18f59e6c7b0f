// Package retry gives the waits between retries: exponential, capped,
// with jitter, so that clients that failed together do not retry together.
package retry

import (
	"math/rand/v2"
	"time"
)

// Backoff returns the wait before retry attempt (0 for the first retry):
// base doubled attempt times, at most limit, of which a random half is
// taken off ("equal jitter": the wait is between half and all of it).
func Backoff(base, limit time.Duration, attempt int) time.Duration {
	if base <= 0 {
		return 0
	}
	d := base << min(attempt, 30)
	if d <= 0 || (limit > 0 && d > limit) {
		d = limit
	}
	return d/2 + rand.N(d/2+1)
}
