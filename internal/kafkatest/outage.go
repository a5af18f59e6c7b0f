package kafkatest

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"
)

// A broker's listener can be switched off and on again, so that a test
// can stop the whole cluster as a client sees it: while down, the
// broker's port refuses connections and every connection it had is cut;
// back up, it listens on the same port. The cluster's state (its logs,
// groups, committed offsets) and its clock go on meanwhile, as a
// restarted Kafka reloads its logs and groups: a group member whose
// session timeout passes during the outage is gone when the brokers
// return.
type switchListener struct {
	addr string

	mu     sync.Mutex
	ln     net.Listener  // nil while down
	up     chan struct{} // closed when the listener comes back
	conns  map[net.Conn]struct{}
	closed bool
}

func newSwitchListener(network, address string) (net.Listener, error) {
	ln, err := net.Listen(network, address)
	if err != nil {
		return nil, err
	}
	return &switchListener{addr: ln.Addr().String(), ln: ln, up: make(chan struct{}), conns: map[net.Conn]struct{}{}}, nil
}

var errListenerClosed = errors.New("listener closed")

func (s *switchListener) Accept() (net.Conn, error) {
	for {
		s.mu.Lock()
		ln, up, closed := s.ln, s.up, s.closed
		s.mu.Unlock()
		if closed {
			return nil, errListenerClosed
		}
		if ln == nil {
			<-up
			continue
		}
		c, err := ln.Accept()
		s.mu.Lock()
		switch {
		case s.closed:
			s.mu.Unlock()
			if c != nil {
				c.Close()
			}
			return nil, errListenerClosed
		case err != nil && s.ln != ln:
			s.mu.Unlock() // switched off under Accept
			continue
		case err != nil:
			s.mu.Unlock()
			return nil, err
		case s.ln != ln:
			s.mu.Unlock()
			c.Close()
			continue
		}
		tc := &trackedConn{Conn: c, s: s}
		s.conns[tc] = struct{}{}
		s.mu.Unlock()
		return tc, nil
	}
}

// down closes the listener and cuts every connection.
func (s *switchListener) down() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil || s.closed {
		return
	}
	s.ln.Close()
	s.ln = nil
	for c := range s.conns {
		c.(*trackedConn).Conn.Close()
	}
	clear(s.conns)
}

// again listens on the same address again.
func (s *switchListener) again() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln != nil || s.closed {
		return nil
	}
	var err error
	for range 50 { // the port may take a moment to be free
		var ln net.Listener
		if ln, err = net.Listen("tcp", s.addr); err == nil {
			s.ln = ln
			close(s.up)
			s.up = make(chan struct{})
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("listening on %s again: %w", s.addr, err)
}

func (s *switchListener) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	close(s.up)
	if s.ln != nil {
		return s.ln.Close()
	}
	return nil
}

func (s *switchListener) Addr() net.Addr {
	a, _ := net.ResolveTCPAddr("tcp", s.addr)
	return a
}

// trackedConn leaves its listener's set when closed.
type trackedConn struct {
	net.Conn
	s *switchListener
}

func (c *trackedConn) Close() error {
	c.s.mu.Lock()
	delete(c.s.conns, c)
	c.s.mu.Unlock()
	return c.Conn.Close()
}

// listeners records the switch listeners a cluster's brokers listen on.
type listeners struct {
	mu  sync.Mutex
	all []*switchListener
}

func (l *listeners) listen(network, address string) (net.Listener, error) {
	ln, err := newSwitchListener(network, address)
	if err == nil {
		l.mu.Lock()
		l.all = append(l.all, ln.(*switchListener))
		l.mu.Unlock()
	}
	return ln, err
}

// StopBrokers stops every broker of the cluster as its clients see it:
// their ports refuse connections and every open connection is cut. The
// cluster's state and timers go on (see switchListener).
func (c *Cluster) StopBrokers() {
	c.lns.mu.Lock()
	defer c.lns.mu.Unlock()
	for _, l := range c.lns.all {
		l.down()
	}
}

// StartBrokers makes the brokers listen on their ports again.
func (c *Cluster) StartBrokers(t testing.TB) {
	t.Helper()
	c.lns.mu.Lock()
	defer c.lns.mu.Unlock()
	for _, l := range c.lns.all {
		if err := l.again(); err != nil {
			t.Fatal(err)
		}
	}
}
