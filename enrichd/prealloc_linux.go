package enrichd

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// preallocate reserves n bytes of disk for f from off on, without changing
// its size (fallocate with FALLOC_FL_KEEP_SIZE). Appends into reserved
// blocks skip the file system's block allocation, which otherwise costs a
// sizeable share of every write of a fast output. It reports
// errors.ErrUnsupported where the file system cannot.
func preallocate(f *os.File, off, n int64) error {
	c, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := c.Control(func(fd uintptr) {
		ferr = unix.Fallocate(int(fd), unix.FALLOC_FL_KEEP_SIZE, off, n)
	}); err != nil {
		return err
	}
	if errors.Is(ferr, unix.EOPNOTSUPP) || errors.Is(ferr, unix.ENOSYS) {
		return errors.ErrUnsupported
	}
	return ferr
}
