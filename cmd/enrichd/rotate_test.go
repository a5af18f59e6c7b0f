package main

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSIGHUPRotation: log rotation of a file output as logrotate does
// it, the file renamed and the process sent SIGHUP, while numbered events
// stream over TCP into an enrichd process with a configuration file. The
// new events go to a new file at the path; the two files hold every
// event once, and events_out_total and output_events_total equal their
// lines.
func TestSIGHUPRotation(t *testing.T) {
	const n = 20_000
	dir := t.TempDir()
	in, httpAddr := freePort(t), freePort(t)
	out := filepath.Join(dir, "out.json")
	cfgPath := filepath.Join(dir, "enrichd.yaml")
	writeFile(t, cfgPath, fmt.Sprintf(`
inputs:
  - {name: tcp, type: tcp, listen: %q}
outputs:
  - {name: file, type: file, path: %q}
http: {listen: %q}
log: {level: info}
`, in, out, httpAddr))
	p := startProcess(t, httpAddr, "--config", cfgPath)
	c, err := net.Dial("tcp", in)
	if err != nil {
		t.Fatal(err)
	}
	// A steady stream, so that the rotation comes in the middle of it.
	sent := make(chan error, 1)
	go func() {
		w := bufio.NewWriter(c)
		for i := range n {
			fmt.Fprintf(w, "<13>1 - h app - - - seq=%d pad=abcdefghijklmnopqrstuvwxyz\n", i)
			if i%100 == 99 {
				if err := w.Flush(); err != nil {
					sent <- err
					return
				}
				time.Sleep(time.Millisecond)
			}
		}
		err := w.Flush()
		if cerr := c.Close(); err == nil {
			err = cerr
		}
		sent <- err
	}()
	lines := func(path string) int {
		b, _ := os.ReadFile(path)
		return bytes.Count(b, []byte{'\n'})
	}
	for deadline := time.Now().Add(time.Minute); lines(out) < n/10; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d lines in the file after a minute; stderr:\n%s", lines(out), p.stderr.String())
		}
	}
	if err := os.Rename(out, out+".1"); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	p.waitLog(t, "outputs reopened", 1)
	if err := <-sent; err != nil {
		t.Fatalf("sending: %v", err)
	}
	for deadline := time.Now().Add(time.Minute); lines(out+".1")+lines(out) < n; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d + %d lines in the two files, want %d; stderr:\n%s", lines(out+".1"), lines(out), n, p.stderr.String())
		}
	}
	eventsOut := p.metricValue(t, "enrichd_events_out_total")
	outputEvents := p.metricValue(t, `enrichd_output_events_total{output="file",type="file"}`)
	p.stop(t)

	before, after := lines(out+".1"), lines(out)
	t.Logf("%d events: %d in the renamed file, %d in the new one", n, before, after)
	if after == 0 {
		t.Errorf("nothing in the new file: the output did not reopen its path")
	}
	seen := make([]int, n)
	re := regexp.MustCompile(`seq=(\d+) `)
	for _, f := range []string{out + ".1", out} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
			m := re.FindStringSubmatch(l)
			if m == nil {
				t.Fatalf("%s: a line without seq: %.200q", f, l)
			}
			seq, _ := strconv.Atoi(m[1])
			if seq >= n {
				t.Fatalf("%s: seq %d out of range", f, seq)
			}
			seen[seq]++
		}
	}
	for seq, c := range seen {
		if c != 1 {
			t.Errorf("seq %d is in the files %d times, want once", seq, c)
		}
	}
	if held := float64(before + after); eventsOut != held || outputEvents != held {
		t.Errorf("events_out_total %v, output_events_total %v, but the two files hold %v lines", eventsOut, outputEvents, held)
	}
}
