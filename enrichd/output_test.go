package enrichd

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestFileReopen: after a rename and Reopen (SIGHUP), new events go to a
// new file and none is lost; the daemon counts delivered what the two
// files hold.
func TestFileReopen(t *testing.T) {
	dir := t.TempDir()
	buildCustomers(t, filepath.Join(dir, "customers.lut"), 10, 1)
	out := filepath.Join(dir, "out.json")
	r := startDaemon(t, testConfig(t, dir, out))
	send := func(from, to int) {
		c := dialTCP(t, r.d, "tcp")
		for i := from; i < to; i++ {
			fmt.Fprintf(c, "<13>1 - h app - - - seq=%d cust=%d\n", i, i%10+1)
		}
		c.Close()
	}
	send(0, 100)
	waitLines(t, out, 100, 10*time.Second)
	if err := os.Rename(out, out+".1"); err != nil {
		t.Fatal(err)
	}
	r.d.Reopen()
	time.Sleep(100 * time.Millisecond)
	send(100, 200)
	waitLines(t, out, 100, 10*time.Second)
	all := append(readLines(t, out+".1"), readLines(t, out)...)
	checkExactlyOnce(t, all, 200, 10)
	checkDeliveredCount(t, r.d, len(all))
}

// TestTCPOutputReconnect: the TCP output reconnects after its peer goes
// away and comes back; every event arrives, once, and the daemon counts
// delivered the events the peer holds: its lines, read to the end of the
// daemon's connection once it stopped, a duplicate counted each time.
func TestTCPOutputReconnect(t *testing.T) {
	dir := t.TempDir()
	buildCustomers(t, filepath.Join(dir, "customers.lut"), 10, 1)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	cfg := testConfig(t, dir, filepath.Join(dir, "unused.json"))
	cfg.Outputs = []OutputConfig{{Name: "peer", Type: "tcp", Address: addr, BufferSize: 4096}}
	r := startDaemon(t, cfg)
	got := make(chan string, 1000)
	serve := func(ln net.Listener, max int) {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		sc := bufio.NewScanner(c)
		for n := 0; n < max && sc.Scan(); n++ {
			got <- sc.Text()
		}
		c.Close()
		ln.Close()
	}
	go serve(ln, 50) // takes 50 lines, then drops the connection
	send := func(from, to int) {
		c := dialTCP(t, r.d, "tcp")
		for i := from; i < to; i++ {
			fmt.Fprintf(c, "<13>1 - h app - - - seq=%d cust=%d\n", i, i%10+1)
		}
		c.Close()
	}
	send(0, 50)
	var lines []string
	for len(lines) < 50 {
		select {
		case l := <-got:
			lines = append(lines, l)
		case <-time.After(10 * time.Second):
			t.Fatalf("got %d lines before the drop", len(lines))
		}
	}
	time.Sleep(100 * time.Millisecond)
	send(50, 100) // written while the peer is away
	time.Sleep(300 * time.Millisecond)
	ln2, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer ln2.Close()
	served := make(chan struct{})
	go func() {
		defer close(served)
		serve(ln2, 1<<30)
	}()
	seen := map[string]int{}
	held := 0 // the lines the peer holds
	take := func(l string) {
		seen[seqRE.FindString(l)]++
		held++
	}
	for _, l := range lines {
		take(l)
	}
	deadline := time.After(20 * time.Second)
	for len(seen) < 100 {
		select {
		case l := <-got:
			take(l)
		case <-deadline:
			t.Fatalf("%d distinct events after reconnect, want 100", len(seen))
		}
	}
	if v := metricSum(t, r.d, `enrichd_output_errors_total{output="peer",`); v < 1 {
		t.Errorf("output errors %v, want >= 1", v)
	}
	checkDeliveredCount(t, r.d, held)
	// Stopped, the daemon closes its connection: the peer reads it to its
	// end, so that a line sent twice is counted.
	r.stop(t)
	select {
	case <-served:
	case <-time.After(time.Minute):
		t.Fatal("the daemon's connection is still open a minute after it stopped")
	}
	for len(got) > 0 {
		take(<-got)
	}
	for seq, c := range seen {
		if c != 1 {
			t.Errorf("%s arrived %d times", seq, c)
		}
	}
	if held != 100 {
		t.Errorf("the peer holds %d lines of 100 events", held)
	}
	_ = strings.Contains
}
