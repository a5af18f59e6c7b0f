//go:build unix

package fsutil

import (
	"os"

	"golang.org/x/sys/unix"
)

// openNoBlock opens path read-only without waiting: O_NONBLOCK makes the
// open of a named pipe with no writer return at once (a regular file
// ignores the flag, which is cleared anyway), O_NOCTTY keeps a terminal
// from becoming the process's controlling terminal.
func openNoBlock(path string) (*os.File, error) {
	var (
		fd  int
		err error
	)
	for {
		fd, err = unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}
