package enrichd

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/lutkit/lutkit/internal/testfiles"
)

// TestTCPConnectionBuffer: a tcp input's connection holds a read buffer
// the size of the messages it has sent, not of max_message_size: 64
// connections (syslog, octet-counted and newline framed, and JSON lines)
// that sent one short message each and stay open hold a few hundred KiB,
// where they held 64 x 4 MiB; a message of 3 MiB still comes whole, in
// both framings.
func TestTCPConnectionBuffer(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out.json")
	cfg, err := ParseConfig(filepath.Join(dir, "enrichd.yaml"), []byte(fmt.Sprintf(`
inputs:
  - {name: tcp, type: tcp, listen: "127.0.0.1:0", max_message_size: 4MiB}
  - {name: json, type: tcp, listen: "127.0.0.1:0", format: json, max_message_size: 4MiB}
tables: {path: %q}
outputs:
  - {type: file, path: %q}
http: {listen: "127.0.0.1:0"}
`, dir, out)))
	if err != nil {
		t.Fatal(err)
	}
	r := startDaemon(t, cfg)
	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapInuse
	}
	before := heap()
	const conns = 64
	for i := range conns {
		in := "tcp"
		msg := fmt.Sprintf("<13>1 2026-01-01T00:00:00Z host app - - - conn=%d", i)
		switch i % 3 {
		case 0:
			msg = fmt.Sprintf("%d %s", len(msg), msg)
		case 1:
			msg += "\n"
		case 2:
			in, msg = "json", fmt.Sprintf("{\"conn\":%d}\n", i)
		}
		c := dialTCP(t, r.d, in)
		defer c.Close()
		if _, err := c.Write([]byte(msg)); err != nil {
			t.Fatal(err)
		}
	}
	waitLines(t, out, conns, 30*time.Second)
	if grew := int64(heap()) - int64(before); grew > 32<<20 {
		t.Errorf("%d open connections that sent a short message each hold %d MiB", conns, grew>>20)
	}
	big := strings.Repeat("x", 3<<20)
	for i, framed := range []string{fmt.Sprintf("%d big=%s", len(big)+4, big), "big=" + big + "\n"} {
		c := dialTCP(t, r.d, "tcp")
		defer c.Close()
		if _, err := c.Write([]byte(framed)); err != nil {
			t.Fatal(err)
		}
		var l string
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			b, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			if lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n"); len(lines) == conns+i+1 && strings.HasSuffix(string(b), "\n") {
				l = lines[len(lines)-1]
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the 3 MiB message %d is not out", i)
			}
		}
		if m := fmt.Sprint(get(decode(t, l), "message")); m != "big="+big || strings.Contains(l, "_truncated") {
			t.Fatalf("the 3 MiB message came as %d bytes: %.200s", len(m), l)
		}
	}
}

// TestTCPPythonSysLogHandler: Python's logging.handlers.SysLogHandler
// over TCP ends each message with NUL and sends no newline (the other
// trailer RFC 6587 names). Every one of its events comes out once, none
// truncated; they used to run together into one truncated event, and
// everything after it on the connection was discarded.
func TestTCPPythonSysLogHandler(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		testfiles.Missing(t, "python3 (Debian package python3)")
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "out.json")
	cfg, err := ParseConfig(filepath.Join(dir, "enrichd.yaml"), []byte(fmt.Sprintf(`
inputs:
  - {name: tcp, type: tcp, listen: "127.0.0.1:0", max_message_size: 1KiB}
tables: {path: %q}
outputs:
  - {type: file, path: %q}
http: {listen: "127.0.0.1:0"}
`, dir, out)))
	if err != nil {
		t.Fatal(err)
	}
	r := startDaemon(t, cfg)
	const n = 2000
	addr := r.d.Addr("tcp").(*net.TCPAddr)
	script := fmt.Sprintf(`
import logging, logging.handlers, socket
h = logging.handlers.SysLogHandler(address=("127.0.0.1", %d), socktype=socket.SOCK_STREAM)
log = logging.getLogger("sender")
log.addHandler(h)
log.setLevel(logging.INFO)
for i in range(%d):
    log.info("python: seq=%%d", i)
h.close()
`, addr.Port, n)
	if b, err := exec.Command(python, "-c", script).CombinedOutput(); err != nil {
		t.Fatalf("python3: %v\n%s", err, b)
	}
	lines := waitLines(t, out, n, 30*time.Second)
	seen := make([]int, n)
	for _, l := range lines {
		if strings.Contains(l, "_truncated") {
			t.Fatalf("truncated: %.300s", l)
		}
		var i int
		if _, err := fmt.Sscanf(fmt.Sprint(get(decode(t, l), "message")), "seq=%d", &i); err != nil || i < 0 || i >= n {
			t.Fatalf("unexpected event: %.300s", l)
		}
		seen[i]++
	}
	for i, c := range seen {
		if c != 1 {
			t.Errorf("seq=%d written %d times, want once", i, c)
		}
	}
	needMetric(t, r.d, `enrichd_events_in_total{input="tcp",type="tcp"}`, n, "events in")
}
