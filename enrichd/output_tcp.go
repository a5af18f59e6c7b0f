package enrichd

import (
	"bufio"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync/atomic"
	"time"
)

func init() {
	RegisterOutput(OutputKind{Type: "tcp", Endpoint: EndpointAddress, New: func(oc *OutputConfig, env *Env) (Output, error) {
		st := env.OutputStats()
		s := &tcpSink{addr: oc.Address, size: oc.BufferSize, st: st, log: env.Log, stop: env.Stop}
		return newStreamOutput(s, st, env.Log), nil
	}})
}

var mOutReconn = MetricDesc("output_reconnects_total", "Connections made by a TCP output.", "output")

// tcpSink writes to a TCP peer, reconnecting with exponential backoff.
// While the peer is away, the output goroutine waits (the bounded queues
// then slow the TCP inputs down); data in a failed write is resent after
// reconnecting, so delivery is at least once.
type tcpSink struct {
	addr string
	size int
	c    net.Conn
	w    *bufio.Writer
	st   *OutputStats
	log  *slog.Logger
	stop <-chan struct{}

	reconnects atomic.Uint64
}

func (s *tcpSink) connect() error {
	backoff := 100 * time.Millisecond
	for {
		c, err := net.DialTimeout("tcp", s.addr, 5*time.Second)
		if err == nil {
			s.c = c
			if s.w == nil {
				s.w = bufio.NewWriterSize(c, s.size)
			} else {
				s.w.Reset(c)
			}
			return nil
		}
		s.st.Errors.Add(1)
		s.log.Warn("output connect failed", "err", err, "retry_in", backoff)
		select {
		case <-s.stop:
			return fmt.Errorf("output %s: giving up: %w", s.st.Name, err)
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 10*time.Second)
	}
}

func (s *tcpSink) drop() {
	if s.c != nil {
		s.c.Close()
		s.c = nil
	}
}

func (s *tcpSink) Write(p []byte) error {
	if s.c != nil && s.w.Buffered() == 0 && peerClosed(s.c) {
		s.fail(errors.New("peer closed the connection"))
	}
	for {
		if s.c == nil {
			if err := s.connect(); err != nil {
				return err
			}
			s.reconnects.Add(1)
		}
		// A failure resends all of p on a new connection.
		if err := writeThrough(s.w, s.c, p); err != nil {
			s.fail(err)
			continue
		}
		s.st.Bytes.Add(uint64(len(p)))
		return nil
	}
}

func (s *tcpSink) fail(err error) {
	s.st.Errors.Add(1)
	s.log.Warn("output write failed, reconnecting", "err", err)
	s.drop()
}

func (s *tcpSink) Flush() error {
	if s.c == nil {
		return nil
	}
	if err := s.w.Flush(); err != nil {
		s.fail(err)
		return err
	}
	return nil
}
func (s *tcpSink) Close() error {
	if s.c == nil {
		return nil
	}
	err := s.w.Flush()
	s.drop()
	return err
}
func (s *tcpSink) Collect(m MetricSink) { m.Counter(mOutReconn, s.reconnects.Load(), s.st.Name) }
