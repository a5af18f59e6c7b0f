//go:build race

package reader_test

// raceEnabled: the race detector is on (sync.Pool then drops some of
// what it is given, so pooled scratch space is allocated again).
const raceEnabled = true
