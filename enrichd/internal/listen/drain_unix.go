//go:build unix

package listen

import (
	"errors"
	"net"
	"os"
	"syscall"
)

// acceptQueued accepts, until the socket says its queue is empty
// (EAGAIN), the connections it has established, and passes each to
// handle. The socket is non-blocking (Go's), so accept never waits.
func (l *Listener) acceptQueued(handle func(net.Conn)) {
	sc, ok := l.ln.(syscall.Conn)
	if !ok {
		return
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return
	}
	var fds []int
	_ = rc.Control(func(fd uintptr) {
		for {
			// As Go's own accept where there is no accept4: no fork
			// between the accept and close-on-exec.
			syscall.ForkLock.RLock()
			nfd, _, err := syscall.Accept(int(fd))
			if err == nil {
				syscall.CloseOnExec(nfd)
			}
			syscall.ForkLock.RUnlock()
			if errors.Is(err, syscall.EINTR) || errors.Is(err, syscall.ECONNABORTED) {
				continue
			}
			if err != nil {
				return // EAGAIN: the queue is empty; or out of descriptors
			}
			fds = append(fds, nfd)
		}
	})
	for _, fd := range fds {
		f := os.NewFile(uintptr(fd), "")
		c, err := net.FileConn(f) // a copy of fd, in Go's poller
		f.Close()
		if err != nil {
			continue
		}
		handle(c)
	}
}
