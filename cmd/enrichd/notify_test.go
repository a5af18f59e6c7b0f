package main

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSystemdNotify runs the built enrichd with NOTIFY_SOCKET naming a
// real unixgram socket and WATCHDOG_USEC set, as systemd runs a
// Type=notify unit: READY=1 comes once the TCP input accepts connections,
// WATCHDOG=1 keeps coming, and SIGTERM brings STOPPING=1 before a clean
// exit.
func TestSystemdNotify(t *testing.T) {
	if testing.Short() {
		t.Skip("builds enrichd")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "enrichd")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	sockPath := filepath.Join(dir, "notify.sock")
	sock, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sockPath, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer sock.Close()

	// A free port, so that the test can connect once READY=1 says so.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()

	cmd := exec.Command(bin, "--tcp", addr, "--out", filepath.Join(dir, "out.json"))
	cmd.Env = append(os.Environ(), "NOTIFY_SOCKET="+sockPath, "WATCHDOG_USEC=400000")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill() }()

	recv := func(want string) {
		t.Helper()
		buf := make([]byte, 4096)
		deadline := time.Now().Add(60 * time.Second)
		for {
			if err := sock.SetReadDeadline(deadline); err != nil {
				t.Fatal(err)
			}
			n, err := sock.Read(buf)
			if err != nil {
				t.Fatalf("waiting for %s: %v\n%s", want, err, stderr.String())
			}
			msg := string(buf[:n])
			if strings.Contains(msg, want) {
				return
			}
			if want == "READY=1" && strings.Contains(msg, "WATCHDOG=1") {
				continue // pings may come before readiness
			}
			if want != "READY=1" && strings.Contains(msg, "WATCHDOG=1") {
				continue
			}
			t.Fatalf("waiting for %s: got %q", want, msg)
		}
	}
	recv("READY=1")
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("READY=1 sent but the TCP input refuses connections: %v", err)
	}
	fmt.Fprintf(c, "<13>1 2026-12-02T06:00:00Z h app - - - a=1\n")
	c.Close()
	for range 2 {
		recv("WATCHDOG=1")
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	recv("STOPPING=1")
	if err := cmd.Wait(); err != nil {
		t.Fatalf("enrichd after SIGTERM: %v\n%s", err, stderr.String())
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "out.json")); !bytes.Contains(b, []byte(`"a":"1"`)) && !bytes.Contains(b, []byte(`a=1`)) {
		t.Errorf("the event sent after READY=1 is not in the output:\n%s", b)
	}
}
