//go:build !unix

package fsutil

// Lock locks nothing where there is no flock: the callers' docs say to
// give each process a directory of its own there.
func Lock(path string) (unlock func(), err error) { return func() {}, nil }
