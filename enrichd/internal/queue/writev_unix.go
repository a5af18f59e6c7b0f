//go:build unix

package queue

import (
	"os"

	"golang.org/x/sys/unix"
)

// reuseFiles says whether delivered segment files are written again:
// writeRecord writes the end mark that tells a reused file's old end from
// a record cut short.
const reuseFiles = true

// writeRecord writes a record's header and payload at off, and the end
// mark after them, in one system call (pwritev). The next record is
// written over the mark.
func writeRecord(f *os.File, h, p []byte, off int64) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	iov := [][]byte{h, p, endMark[:]}
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
