//go:build !unix

package tables

import "io/fs"

// lockDir is a no-op where flock is unavailable: run one build per
// directory at a time.
func lockDir(dir string) (func(), error) { return func() {}, nil }

// sysIDs is unavailable: files are told apart by size and modification
// time only.
func sysIDs(fi fs.FileInfo) (dev, ino uint64, ok bool) { return 0, 0, false }
