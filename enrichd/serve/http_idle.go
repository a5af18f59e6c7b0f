package serve

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// CloseSilent returns an http.Server ConnState hook that closes a
// connection that has not sent a whole request header within idle of
// being accepted. net/http applies its IdleTimeout only between requests
// (to the wait for the next request's first byte); before the first
// request only ReadHeaderTimeout bounds a connection, so one that is
// opened and sends nothing would live that long. With the hook, idle_timeout
// holds from the moment a connection is accepted. An idle of 0 or less
// returns nil (no hook).
func CloseSilent(idle time.Duration) func(net.Conn, http.ConnState) {
	if idle <= 0 {
		return nil
	}
	var mu sync.Mutex
	timers := make(map[net.Conn]*time.Timer)
	return func(c net.Conn, st http.ConnState) {
		mu.Lock()
		defer mu.Unlock()
		if st == http.StateNew {
			timers[c] = time.AfterFunc(idle, func() { _ = c.Close() })
			return
		}
		// Any other state: a request was read, or the connection is gone.
		if t, ok := timers[c]; ok {
			t.Stop()
			delete(timers, c)
		}
	}
}
