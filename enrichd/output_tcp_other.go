//go:build !linux

package enrichd

import "net"

type connInfo struct{ acked, window uint64 }

// tcpInfo is not read on this platform: a break counts every event
// written on the connection as possibly lost.
func tcpInfo(net.Conn) (connInfo, bool) { return connInfo{}, false }
