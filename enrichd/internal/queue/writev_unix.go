//go:build unix

package queue

import (
	"os"

	"golang.org/x/sys/unix"
)

// writeRecord writes a record's header and payload at off in one
// system call (pwritev).
func writeRecord(f *os.File, h, p []byte, off int64) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	iov := [][]byte{h, p}
	var werr error
	if err := rc.Write(func(fd uintptr) bool {
		for len(iov) > 0 {
			n, err := unix.Pwritev(int(fd), iov, off)
			if err == unix.EINTR {
				continue
			}
			if err != nil {
				werr = err
				return true
			}
			off += int64(n)
			for len(iov) > 0 && n >= len(iov[0]) {
				n -= len(iov[0])
				iov = iov[1:]
			}
			if len(iov) > 0 {
				iov[0] = iov[0][n:]
			}
		}
		return true
	}); err != nil {
		return err
	}
	if werr != nil {
		return &os.PathError{Op: "write", Path: f.Name(), Err: werr}
	}
	return nil
}
