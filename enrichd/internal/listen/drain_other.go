//go:build !unix

package listen

import "net"

// acceptQueued does nothing where the socket's queue cannot be read
// without waiting: Drain then takes no more connections.
func (l *Listener) acceptQueued(func(net.Conn)) {}
