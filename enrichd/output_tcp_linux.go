package enrichd

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// connInfo is what the kernel says of a TCP connection: the bytes its
// peer acknowledged, and the receive window the peer last advertised.
type connInfo struct{ acked, window uint64 }

// tcpInfo reads TCP_INFO of c (it stays readable after a reset).
func tcpInfo(c net.Conn) (connInfo, bool) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return connInfo{}, false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return connInfo{}, false
	}
	var ti *unix.TCPInfo
	var gerr error
	if err := rc.Control(func(fd uintptr) {
		ti, gerr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO)
	}); err != nil || gerr != nil {
		return connInfo{}, false
	}
	return connInfo{acked: ti.Bytes_acked, window: uint64(ti.Snd_wnd)}, true
}
