package listen

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/lutkit/lutkit/internal/testpki"
)

// TestDrainTakesQueuedConnections: connections the system established
// before Drain, whose clients wrote and closed while nothing accepted
// them (they wait in the socket's queue), are all returned by Accept
// after Drain, with what their clients wrote; then Accept returns
// net.ErrClosed, and a connection attempted after Drain is refused. With
// Close in place of Drain, the queued connections are reset, and none
// (or only those the listener had taken) would be read.
func TestDrainTakesQueuedConnections(t *testing.T) {
	for _, useTLS := range []bool{false, true} {
		t.Run(fmt.Sprintf("tls=%v", useTLS), func(t *testing.T) {
			const n = 64
			var o Options
			var clientTLS *tls.Config
			if useTLS {
				ca := testpki.NewCA(t, "ca")
				srv := ca.Server(t, "enrichd")
				o.TLS = &TLS{CertFile: srv.CertFile, KeyFile: srv.KeyFile}
				clientTLS = &tls.Config{RootCAs: ca.Pool(), ServerName: "127.0.0.1"}
			}
			l, err := Listen("127.0.0.1:0", o)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { l.Close() })
			addr := l.Addr().String()
			// Nothing accepts yet: each connection waits in the queue.
			// A plaintext client writes and closes at once; a TLS one
			// writes once Drain has taken it into its handshake.
			var sent sync.WaitGroup
			for i := range n {
				c, err := net.Dial("tcp", addr)
				if err != nil {
					t.Fatal(err)
				}
				sent.Add(1)
				go func() {
					defer sent.Done()
					defer c.Close()
					var w io.Writer = c
					if useTLS {
						tc := tls.Client(c, clientTLS)
						_ = tc.SetDeadline(time.Now().Add(20 * time.Second))
						if err := tc.Handshake(); err != nil {
							t.Errorf("handshake %d: %v", i, err)
							return
						}
						w = tc
						defer tc.Close()
					}
					if _, err := fmt.Fprintf(w, "conn %d\n", i); err != nil {
						t.Errorf("write %d: %v", i, err)
					}
				}()
			}
			if !useTLS {
				sent.Wait() // written and closed before the drain
			}
			l.Drain(time.Now().Add(time.Minute))
			var got []string
			for {
				c, err := l.Accept()
				if errors.Is(err, net.ErrClosed) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				line, err := readLine(c)
				if err != nil {
					t.Errorf("read: %q, %v", line, err)
				}
				got = append(got, line)
				c.Close()
			}
			sent.Wait()
			sort.Strings(got)
			if len(got) != n {
				t.Fatalf("%d connections read after Drain, want %d: %q", len(got), n, got)
			}
			for i := range n {
				if !containsString(got, fmt.Sprintf("conn %d", i)) {
					t.Errorf("conn %d not read", i)
				}
			}
			if c, err := net.DialTimeout("tcp", addr, 2*time.Second); err == nil {
				c.Close()
				t.Errorf("a connection after Drain was taken")
			}
		})
	}
}

func containsString(s []string, v string) bool {
	i := sort.SearchStrings(s, v)
	return i < len(s) && s[i] == v
}
