//go:build !unix

package enrichd

import "net"

// peerClosed is not implemented on this platform: a closed peer is found
// by the next failing write.
func peerClosed(c net.Conn) bool { return false }
