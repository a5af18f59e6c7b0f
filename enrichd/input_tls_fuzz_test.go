package enrichd

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/lutkit/lutkit/enrichd/parse"
	"github.com/lutkit/lutkit/internal/testpki"
)

// FuzzTLSFraming sends each input over TLS to a daemon's tcp input, in
// writes of the size the fuzzer picks, and checks that the input framed
// what the plain Framer frames of the same bytes: as many messages, as
// many bytes, whatever the TLS records cut.
func FuzzTLSFraming(f *testing.F) {
	f.Add([]byte("a\nb\r\nc"), uint8(1))
	f.Add([]byte("3 abc5 hello\n12 hello world!"), uint8(2))
	f.Add([]byte("999999999 x"), uint8(0))
	f.Add([]byte("53 <156>Nov 30 06:16:21 vm myapp[3480]: hello octet 3164"), uint8(7))
	f.Add([]byte("\n\n\r\nxxxxxxxxxxxxxxxxxxxxxxxx\nyy"), uint8(3))
	f.Add(bytes.Repeat([]byte("<13>1 - h a - - - x=1\n"), 200), uint8(0))
	dir := f.TempDir()
	ca := testpki.NewCA(f, "ca")
	srv := ca.Server(f, "enrichd")
	const maxMsg = 1024
	yml := fmt.Sprintf(`
inputs:
  - {name: tls, type: tcp, listen: "127.0.0.1:0", max_message_size: %d, tls: {cert_file: %q, key_file: %q}}
outputs: [{type: file, path: %q}]
drain_read_grace: 50ms
`, maxMsg, srv.CertFile, srv.KeyFile, filepath.Join(dir, "out.json"))
	cfg, err := ParseConfig(filepath.Join(dir, "enrichd.yaml"), []byte(yml))
	if err != nil {
		f.Fatal(err)
	}
	r := startDaemon(f, cfg)
	addr := r.d.Addr("tls").String()
	st := r.d.inputs[0].Stats()
	tcfg := &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost"}
	f.Fuzz(func(t *testing.T, data []byte, chunk uint8) {
		// What the plain Framer makes of the bytes.
		var wantN, wantB uint64
		fr := parse.NewFramer(bytes.NewReader(data), maxMsg)
		for {
			msg, _, err := fr.Next()
			if err != nil {
				break
			}
			wantN++
			wantB += uint64(len(msg))
		}
		n0, b0 := st.Events.Load(), st.Bytes.Load()
		c, err := tls.Dial("tcp", addr, tcfg)
		if err != nil {
			t.Fatal(err)
		}
		size := int(chunk) + 1
		if chunk == 0 {
			size = len(data) + 1
		}
		for rest := data; len(rest) > 0; {
			k := min(size, len(rest))
			if _, err := c.Write(rest[:k]); err != nil {
				// The input ends a connection at a bad octet count: what
				// came before it is framed.
				break
			}
			rest = rest[k:]
		}
		_ = c.CloseWrite()
		// The input closes the connection once it has framed everything.
		_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
		_, _ = io.Copy(io.Discard, c)
		c.Close()
		for end := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
			n, b := st.Events.Load()-n0, st.Bytes.Load()-b0
			if n == wantN && b == wantB {
				return
			}
			if n > wantN || time.Now().After(end) {
				t.Fatalf("framed %d messages (%d bytes) over TLS, %d (%d bytes) plain", n, b, wantN, wantB)
			}
		}
	})
}
