package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lutkit/lutkit/internal/syncbuf"
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
	var stderr syncbuf.Buffer // written by exec's copying goroutine
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

type neverReady struct{}

func (neverReady) Ready() bool { return false }

// TestNotifyStoppingAfterFastDrain: a drain that ends before the notifier
// goroutine runs (the signal and the daemon's return both pending at once)
// still sends STOPPING=1. Each round has a one-in-two chance of showing a
// notifier that picks the return first and says nothing.
func TestNotifyStoppingAfterFastDrain(t *testing.T) {
	sockPath := filepath.Join(t.TempDir(), "notify.sock")
	sock, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sockPath, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer sock.Close()
	t.Setenv("NOTIFY_SOCKET", sockPath)
	t.Setenv("WATCHDOG_USEC", "")
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	buf := make([]byte, 256)
	for round := range 40 {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()                                   // the signal came
		notifySystemd(ctx, neverReady{}, logger)() // and the daemon returned
		if err := sock.SetReadDeadline(time.Now().Add(5 * time.Second)); err != nil {
			t.Fatal(err)
		}
		n, err := sock.Read(buf)
		if err != nil || string(buf[:n]) != "STOPPING=1" {
			t.Fatalf("round %d: got %q, %v; want STOPPING=1", round, buf[:n], err)
		}
	}
	// Exactly one per stop: nothing more is waiting.
	if err := sock.SetReadDeadline(time.Now().Add(100 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if n, err := sock.Read(buf); err == nil {
		t.Fatalf("one more message: %q", buf[:n])
	}
}
