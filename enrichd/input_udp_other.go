//go:build !linux

package enrichd

import "net"

// setReadBuffer sets c's SO_RCVBUF to size. The size obtained is not read
// back outside Linux: it is reported as asked.
func setReadBuffer(c *net.UDPConn, size int) (int, error) {
	return size, c.SetReadBuffer(size)
}

// socketDrops is the kernel's count of the socket's dropped datagrams,
// which only Linux gives.
func socketDrops(*net.UDPConn) (uint32, bool) { return 0, false }
