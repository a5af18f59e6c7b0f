//go:build unix

package tablebuild

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockDir takes an exclusive advisory lock on dir/.lutbuild.lock, released
// by the returned function or when the process exits.
func lockDir(dir string) (func(), error) {
	path := filepath.Join(dir, ".lutbuild.lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: another build is running in %s (%w)", path, dir, err)
	}
	return func() {
		// Closing the file releases the lock as well: an unlock error
		// leaves nothing held.
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
