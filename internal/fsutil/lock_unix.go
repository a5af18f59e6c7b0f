//go:build unix

package fsutil

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Lock takes an exclusive advisory lock (flock) on path, created if need
// be, without waiting. The lock is held until the returned function is
// called, or the process exits, whatever way it ends. When another
// process holds it (or another Lock of the same file in this process),
// the error wraps ErrLocked; any other error is a *os.PathError.
func Lock(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o640)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("%s: %w", path, ErrLocked)
		}
		return nil, &os.PathError{Op: "flock", Path: path, Err: err}
	}
	// Closing the file releases the lock: nothing to unlock first.
	return func() { _ = f.Close() }, nil
}
