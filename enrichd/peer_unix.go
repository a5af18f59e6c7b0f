//go:build unix

package enrichd

import (
	"net"
	"syscall"
)

// peerClosed reports whether the peer of c has closed the connection. A
// write to a closed peer can succeed locally and lose the data, so the TCP
// output checks before writing: one non-blocking read.
func peerClosed(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	closed := false
	var b [1]byte
	err = rc.Read(func(fd uintptr) bool {
		n, err := syscall.Read(int(fd), b[:])
		closed = (n == 0 && err == nil) || (err != nil && err != syscall.EAGAIN && err != syscall.EINTR)
		return true // never wait
	})
	if err != nil {
		return false // closed on this side: the write says so
	}
	return closed
}
