package serve_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// closedAfter reads c until the server closes it and returns how long
// after start that was; it fails after limit.
func closedAfter(t *testing.T, c net.Conn, start time.Time, limit time.Duration) time.Duration {
	t.Helper()
	_ = c.SetReadDeadline(start.Add(limit))
	if _, err := io.Copy(io.Discard, c); err != nil {
		t.Fatalf("connection not closed by the server within %v: %v", limit, err)
	}
	return time.Since(start)
}

// TestHTTPIdleFromAccept: http.idle_timeout (1s) holds from the moment a
// connection is accepted: one that sends nothing is closed after it, well
// before read_header_timeout (30s); one that sends a request is answered,
// and closed once it has been silent idle_timeout after the answer.
func TestHTTPIdleFromAccept(t *testing.T) {
	const idle, header = time.Second, 30 * time.Second
	dir := t.TempDir()
	d := runDaemon(t, dir, `
tables: {path: .}
http: {listen: "127.0.0.1:0", read_header_timeout: 30s, limits: {idle_timeout: 1s}}
`)
	addr := d.HTTPAddr().String()

	silent, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	start := time.Now()
	if took := closedAfter(t, silent, start, header-5*time.Second); took < idle-100*time.Millisecond {
		t.Errorf("silent connection closed after %v, before idle_timeout %v", took, idle)
	} else {
		t.Logf("silent connection closed after %v (idle_timeout %v, read_header_timeout %v)", took, idle, header)
	}

	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("healthz: %d", resp.StatusCode)
	}
	answered := time.Now()
	_ = c.SetReadDeadline(answered.Add(header - 5*time.Second))
	if _, err := io.Copy(io.Discard, br); err != nil {
		t.Fatalf("kept-alive connection not closed within %v: %v", header-5*time.Second, err)
	}
	if took := time.Since(answered); took < idle-100*time.Millisecond {
		t.Errorf("kept-alive connection closed %v after its answer, before idle_timeout %v", took, idle)
	}
}

// TestHTTPIdleNever: with idle_timeout 0 ("never"), a kept-alive
// connection silent for longer than request_timeout still takes its next
// request (net/http would take request_timeout as the idle timeout).
func TestHTTPIdleNever(t *testing.T) {
	dir := t.TempDir()
	d := runDaemon(t, dir, `
tables: {path: .}
http: {listen: "127.0.0.1:0", request_timeout: 1s, limits: {idle_timeout: 0}}
`)
	c, err := net.Dial("tcp", d.HTTPAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	for i := range 2 {
		if i > 0 {
			time.Sleep(2500 * time.Millisecond) // silent for longer than request_timeout
		}
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.WriteString(c, "GET /v1/tables/customers/1 HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("request %d on the kept-alive connection: %v", i, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"Acme"`) {
			t.Fatalf("request %d: %d %s", i, resp.StatusCode, body)
		}
	}
}
