package main

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestSIGHUPDuringStart: a SIGHUP sent while enrichd starts (log
// rotation, while tables are verified or downloaded) does not end it.
// Here the start waits on its file output, a FIFO no reader has opened
// yet; the SIGHUP comes then. Once a reader opens the FIFO the daemon
// runs, the SIGHUP reopens its outputs, and SIGTERM stops it with exit
// status 0.
func TestSIGHUPDuringStart(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "out.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	httpAddr := freePort(t)
	p := &daemonProcess{stderr: &lockedBuffer{}, http: httpAddr}
	p.cmd = exec.Command(os.Args[0], "--tcp", "127.0.0.1:0", "--out", fifo, "--http", httpAddr)
	p.cmd.Env = append(os.Environ(), "ENRICHD_TEST_RUN_MAIN=1")
	p.cmd.Stderr = p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// exited is closed once the process has ended, with waitErr set.
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = p.cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		select {
		case <-exited:
		default:
			_ = p.cmd.Process.Kill()
			<-exited
		}
	})
	// Logged by the start before it opens the outputs: the open of the
	// FIFO waits for a reader from then on.
	p.waitLog(t, "no rules", 1)
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
		t.Fatalf("enrichd ended on the SIGHUP sent during its start: %v; stderr:\n%s", waitErr, p.stderr.String())
	case <-time.After(500 * time.Millisecond):
	}
	// A reader that never blocks, kept open to the end: the daemon's open
	// of the FIFO (and its reopen) goes through.
	r, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for deadline := time.Now().Add(time.Minute); ; {
		if c, _, err := p.get("/readyz"); err == nil && c == http.StatusOK {
			break
		}
		select {
		case <-exited:
			t.Fatalf("enrichd ended before it was ready: %v; stderr:\n%s", waitErr, p.stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz never answered 200; stderr:\n%s", p.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	p.waitLog(t, "SIGHUP: outputs and TLS files reopened", 1)
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
		if waitErr != nil {
			t.Fatalf("exit: %v; stderr:\n%s", waitErr, p.stderr.String())
		}
	case <-time.After(time.Minute):
		t.Fatalf("no exit a minute after SIGTERM; stderr:\n%s", p.stderr.String())
	}
}
