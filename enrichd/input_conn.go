package enrichd

import (
	"net"
	"sync/atomic"
	"time"
)

// connReader reads a connection of a listening input (tcp, relp). It
// flushes the pending batch when the connection goes quiet for the flush
// interval, ends once the input stops (at its drain deadline, or at once),
// and ends a connection idle for idle_timeout, counted in idle, unless
// busy says the client is waiting for answers.
type connReader struct {
	c           net.Conn
	bt          *Batcher
	stop        *stopState
	atOnce      bool          // on stop, end now rather than at the drain deadline
	idleTimeout time.Duration // 0: none
	idle        *atomic.Uint64
	busy        func() bool // nil: a silent connection is idle
	pre         []byte      // bytes read before the reader was handed on
}

// stopDeadline is when a stopping input's connection stops reading.
func (r *connReader) stopDeadline() time.Time {
	if r.atOnce {
		return time.Now()
	}
	return r.stop.drainDeadline()
}

func (r *connReader) Read(p []byte) (int, error) {
	if len(r.pre) > 0 {
		n := copy(p, r.pre)
		r.pre = r.pre[n:]
		return n, nil
	}
	for {
		var deadline time.Time // none: wait for the next bytes
		switch {
		case r.stop.isStopping():
			deadline = r.stopDeadline()
		case r.bt.Pending():
			if !time.Now().Before(r.bt.Due()) {
				r.bt.Flush()
				continue
			}
			deadline = time.Now().Add(r.bt.FlushInterval())
		case r.idleTimeout > 0:
			deadline = time.Now().Add(r.idleTimeout)
		}
		if err := r.c.SetReadDeadline(deadline); err != nil {
			return 0, err
		}
		if r.stop.isStopping() {
			// The input's Stop may have set the connection's deadline
			// before the one just set.
			_ = r.c.SetReadDeadline(r.stopDeadline())
		}
		n, err := r.c.Read(p)
		if n > 0 || err == nil {
			return n, err
		}
		if isTimeout(err) && !r.stop.isStopping() {
			if r.bt.Pending() {
				r.bt.Flush()
				continue
			}
			if r.busy != nil && r.busy() {
				continue // not idle: the client waits for answers
			}
			r.idle.Add(1)
		}
		return 0, err
	}
}
