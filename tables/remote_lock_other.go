//go:build !unix

package tables

// lockFile is a no-op where flock is unavailable: give each process a
// cache directory of its own.
func lockFile(path string) (func(), error) { return func() {}, nil }
