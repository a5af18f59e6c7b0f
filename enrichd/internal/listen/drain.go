package listen

import "time"

// Drain stops taking connections without dropping those the system has
// already established: a client that connected and wrote before Drain
// was called may have closed since, and its connection still waits in
// the socket's accept queue. Drain accepts every connection of that queue
// (on systems that can tell when it is empty: see acceptQueued), hands
// each through the caps and its handshake as any other, and closes the
// socket; Accept returns them all, and then net.ErrClosed. A TLS
// handshake, under way or started by Drain, ends by deadline at the
// latest (a handshake that would still be going on then is refused as
// timed out), so that Accept returns net.ErrClosed by then and not
// handshake_timeout later. A connection that completes its handshake with
// the system after Drain is refused by it. Close, called after or instead
// of Drain, ends the drain at once: connections still in their handshake
// or not yet taken by Accept are closed.
func (l *Listener) Drain(deadline time.Time) {
	if !l.draining.CompareAndSwap(false, true) {
		return
	}
	l.mu.Lock()
	l.drainBy = deadline
	for pc := range l.pending {
		if c, ok := pc.(*conn); ok && !c.handshakeBy.IsZero() && deadline.Before(c.handshakeBy) {
			c.handshakeBy = deadline
			_ = c.SetDeadline(deadline)
		}
	}
	l.mu.Unlock()
	// run, if Accept has not started it, never starts: the socket is
	// read here until it is closed.
	l.startOnce.Do(func() {})
	l.acceptQueued(l.handle)
	err := l.ln.Close()
	go func() {
		l.wg.Wait() // run has returned: nothing more comes from the socket
		l.admits.Wait()
		l.closeOnce.Do(func() { close(l.closed) })
	}()
	if err != nil {
		// Already closed (Close): run has seen it, or will.
		l.closeOnce.Do(func() { close(l.closed) })
	}
}
