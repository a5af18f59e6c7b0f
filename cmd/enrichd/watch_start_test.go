package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestWatchConfigDuringStart: with --watch-config, a change of the file
// made while enrichd starts (here its file output is a FIFO no reader has
// opened yet, so the start waits, as one verifying or downloading big
// tables does) is reloaded once the daemon runs: the output the changed
// file names gets the events.
func TestWatchConfigDuringStart(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "out.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	tcpAddr, httpAddr := freePort(t), freePort(t)
	cfgPath := filepath.Join(dir, "enrichd.yaml")
	write := func(out string) {
		writeFile(t, cfgPath, fmt.Sprintf("inputs: [{type: tcp, listen: %q}]\noutputs: [{type: file, path: %s}]\nhttp: {listen: %q}\n", tcpAddr, out, httpAddr))
	}
	write("out.fifo")
	p := launchProcess(t, httpAddr, "--config", cfgPath, "--watch-config")
	// Logged by the start before it opens the outputs: the open of the
	// FIFO waits for a reader from then on.
	p.waitLog(t, "no rules", 1)
	write("out.json")
	// A reader that never blocks, kept open to the end: the start goes
	// on.
	r, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	p.waitStatus(t, "/readyz", http.StatusOK)
	for deadline := time.Now().Add(15 * time.Second); !strings.Contains(p.stderr.String(), "configuration reloaded"); {
		if time.Now().After(deadline) {
			t.Fatalf("the change made during the start was not reloaded; stderr:\n%s", p.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	p.sendWait(t, tcpAddr, "<13>1 2026-11-30T06:16:21Z h app - - - after the change", filepath.Join(dir, "out.json"), "after the change")
	p.stop(t)
}
