package serve

import (
	"net/http"
	"runtime/debug"
)

// A table file truncated or rewritten in place faults when a lookup reads
// its mapping. The request goroutines run with debug.SetPanicOnFault, so
// that the fault is a panic, recovered here: the set marks the table's
// version damaged (its lookups miss until a good version is published)
// and the request's connection is closed. Any other panic goes on.

// serveGuarded is ServeHTTP with table faults recovered: the faulted
// request is aborted (http.ErrAbortHandler closes its connection).
func (a *API) serveGuarded(w http.ResponseWriter, r *http.Request) {
	defer guardFaults()()
	defer func() {
		if v := recover(); v != nil {
			if _, ok := a.set.Fault(v); !ok {
				panic(v)
			}
			panic(http.ErrAbortHandler)
		}
	}()
	a.ServeHTTP(w, r)
}

// recoverFault, deferred by a connection's goroutine, recovers a fault in
// a table: the connection is then closed by the goroutine's other
// deferred calls.
func (s *Memcached) recoverFault() {
	if v := recover(); v != nil {
		if table, ok := s.set.Fault(v); !ok {
			panic(v)
		} else {
			s.log.Warn("memcached: a lookup faulted in a damaged table; connection closed", "table", table)
		}
	}
}

// guardFaults turns faults reading a mapping into panics for the calling
// goroutine; the returned function restores the previous setting.
func guardFaults() (restore func()) {
	old := debug.SetPanicOnFault(true)
	return func() { debug.SetPanicOnFault(old) }
}
