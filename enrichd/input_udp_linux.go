package enrichd

import (
	"net"
	"unsafe"

	"golang.org/x/sys/unix"
)

// setReadBuffer sets c's SO_RCVBUF to size and returns the size the
// kernel gave. SO_RCVBUFFORCE, which only CAP_NET_ADMIN may use, is tried
// first: the configured size is then obtained whatever net.core.rmem_max
// says; without the capability the kernel caps SO_RCVBUF at rmem_max.
// Linux reports twice the size set (it counts its bookkeeping), so the
// size obtained is half of what getsockopt reads.
func setReadBuffer(c *net.UDPConn, size int) (int, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return 0, err
	}
	var got int
	var serr, gerr error
	err = rc.Control(func(fd uintptr) {
		if unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, size) != nil {
			serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF, size)
		}
		var v int
		v, gerr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF)
		got = v / 2
	})
	for _, e := range []error{err, serr, gerr} {
		if e != nil {
			return got, e
		}
	}
	return got, nil
}

// socketDrops reads the kernel's count of datagrams c's socket dropped
// (SO_MEMINFO's SK_MEMINFO_DROPS, the "drops" column of /proc/net/udp:
// a full receive buffer, mostly). It is one getsockopt, read when the
// metrics are scraped, so the read loop pays nothing for it.
func socketDrops(c *net.UDPConn) (uint32, bool) {
	rc, err := c.SyscallConn()
	if err != nil {
		return 0, false
	}
	var mem [unix.SK_MEMINFO_VARS]uint32
	ok := false
	err = rc.Control(func(fd uintptr) {
		l := uint32(unsafe.Sizeof(mem))
		_, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, fd, unix.SOL_SOCKET, unix.SO_MEMINFO,
			uintptr(unsafe.Pointer(&mem[0])), uintptr(unsafe.Pointer(&l)), 0)
		ok = e == 0 && l >= (unix.SK_MEMINFO_DROPS+1)*4
	})
	if err != nil || !ok {
		return 0, false
	}
	return mem[unix.SK_MEMINFO_DROPS], true
}
