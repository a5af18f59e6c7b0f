package serve

import (
	"bufio"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// TestMemcachedMaxConnections checks that a connection over the cap is
// answered as memcached answers it and closed, and that a closed
// connection frees its place.
func TestMemcachedMaxConnections(t *testing.T) {
	s, addr := startMC(t, MemcachedOptions{MaxConnections: 2})
	var open []net.Conn
	for range 2 {
		c, r := dialMC(t, addr)
		send(t, c, []byte("version\r\n"))
		if l, err := r.ReadString('\n'); l != "VERSION "+MemcachedVersion+"\r\n" {
			t.Fatalf("%q %v", l, err)
		}
		open = append(open, c)
	}
	c, r := dialMC(t, addr)
	l, err := r.ReadString('\n')
	if l != "ERROR Too many open connections\r\n" {
		t.Errorf("third connection: %q %v", l, err)
	}
	if _, err := r.ReadByte(); !errors.Is(err, io.EOF) {
		t.Errorf("third connection not closed: %v", err)
	}
	c.Close()
	open[0].Close()
	waitFor(t, func() bool { return s.Stats().CurrConnections == 1 })
	c, r = dialMC(t, addr)
	send(t, c, []byte("version\r\n"))
	if l, err := r.ReadString('\n'); l != "VERSION "+MemcachedVersion+"\r\n" {
		t.Errorf("after a close: %q %v", l, err)
	}
	st := s.Stats()
	if st.RejectedConnections != 1 || st.TotalConnections != 3 || st.CurrConnections != 2 {
		t.Errorf("stats %+v", st)
	}
}

// TestMemcachedIdleTimeout checks that a silent connection is closed after
// the idle timeout and that one that keeps talking is not.
func TestMemcachedIdleTimeout(t *testing.T) {
	const idle = 300 * time.Millisecond
	s, addr := startMC(t, MemcachedOptions{IdleTimeout: idle})
	quiet, qr := dialMC(t, addr)
	busy, br := dialMC(t, addr)
	send(t, quiet, []byte("version\r\n"))
	if l, err := qr.ReadString('\n'); l != "VERSION "+MemcachedVersion+"\r\n" {
		t.Fatalf("silent connection: %q %v", l, err)
	}
	start := time.Now()
	for time.Since(start) < 3*idle {
		send(t, busy, []byte("mn\r\n"))
		if l, err := br.ReadString('\n'); l != "MN\r\n" {
			t.Fatalf("busy connection: %q %v", l, err)
		}
		time.Sleep(idle / 6)
	}
	if _, err := qr.ReadByte(); !errors.Is(err, io.EOF) {
		t.Errorf("silent connection: %v", err)
	}
	if st := s.Stats(); st.IdleClosed != 1 || st.CurrConnections != 1 {
		t.Errorf("stats %+v", st)
	}
	busy.Close()
	// A binary connection halfway through a request is silent too.
	c, r := dialMC(t, addr)
	send(t, c, binReq{op: opGet, key: []byte("customers:42")}.bytes()[:30])
	if _, err := bufio.NewReader(r).ReadByte(); !errors.Is(err, io.EOF) {
		t.Errorf("half a request: %v", err)
	}
	waitFor(t, func() bool { return s.Stats().IdleClosed == 2 })
	// memcached's stats name for them, shown with an idle timeout only.
	c, r = dialMC(t, addr)
	send(t, c, []byte("stats\r\n"))
	for l := ""; l != "END\r\n"; {
		var err error
		if l, err = r.ReadString('\n'); err != nil {
			t.Fatal(err)
		}
		if l == "STAT idle_kicks 2\r\n" {
			return
		}
	}
	t.Error("no STAT idle_kicks 2")
}

// TestMemcachedIdleWriter checks that a client that sends but does not
// read its answers is closed after the idle timeout.
func TestMemcachedIdleWriter(t *testing.T) {
	s, addr := startMC(t, MemcachedOptions{IdleTimeout: 300 * time.Millisecond})
	c, _ := dialMC(t, addr)
	line := []byte("get" + strings.Repeat(" customers:1", 4000) + "\r\n") // ~300 KB of answers each
	go func() {
		for range 200 {
			if _, err := c.Write(line); err != nil {
				return
			}
		}
	}()
	waitFor(t, func() bool { return s.Stats().IdleClosed == 1 })
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 5s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
