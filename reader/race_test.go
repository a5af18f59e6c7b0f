package reader_test

import "testing"

// differential skips a differential test under the race detector: it
// runs in one goroutine, and up to 30x slower under the detector
// (TestPatternTimeDifferential: 113 s, 3.8 s without). make test runs
// these tests without it (NORACE_TESTS in the Makefile).
func differential(t *testing.T) {
	t.Helper()
	if raceEnabled {
		t.Skip("a differential test, one goroutine: make test runs it without the race detector (NORACE_TESTS)")
	}
}
