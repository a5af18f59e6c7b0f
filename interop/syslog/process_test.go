package syslog

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// proc is a program the test started: its stdout and stderr are kept for
// the failure message, and it is stopped (SIGTERM, then SIGKILL after
// 20 s) when the test ends unless the test stopped it before.
type proc struct {
	name string
	cmd  *exec.Cmd
	mu   sync.Mutex
	log  bytes.Buffer
	done chan struct{}
	err  error
}

// tz runs every program of the tests in UTC, so that a timestamp without a
// zone (RFC 3164) means the same instant to the sender and to enrichd.
const tz = "TZ=UTC"

// start starts a program; line, if not nil, is called with every line it
// writes to stdout or stderr.
func start(t testing.TB, name string, args []string, line func(string)) *proc {
	t.Helper()
	p := &proc{name: name, cmd: exec.Command(args[0], args[1:]...), done: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), tz)
	r, w := io.Pipe()
	p.cmd.Stdout, p.cmd.Stderr = w, w
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	go func() {
		sc := bufio.NewScanner(r)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			p.mu.Lock()
			p.log.WriteString(sc.Text())
			p.log.WriteByte('\n')
			p.mu.Unlock()
			if line != nil {
				line(sc.Text())
			}
		}
		// Drained if a line over 1 MiB stopped the scanner; a read
		// error ends the output all the same.
		_, _ = io.Copy(io.Discard, r)
	}()
	go func() {
		p.err = p.cmd.Wait()
		w.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.stop(t)
		if t.Failed() {
			t.Logf("%s output:\n%s", name, p.output())
		}
	})
	return p
}

func (p *proc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.String()
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM and waits for the program to exit (a program that
// takes more than 20 s is killed and the test fails). A program that has
// already exited is left alone.
func (p *proc) stop(t testing.TB) {
	t.Helper()
	if p.exited() {
		return
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		t.Errorf("%s: SIGTERM: %v", p.name, err)
	}
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		_ = p.cmd.Process.Kill() // killed or gone: Wait reaps it
		<-p.done
		t.Errorf("%s did not stop within 20 s of SIGTERM", p.name)
	}
}

// freePort returns a loopback port that was free a moment ago, for TCP
// (and, on Linux, UDP: the test binds both to be sure).
func freePort(t testing.TB) string {
	t.Helper()
	for range 20 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		_, port, _ := net.SplitHostPort(l.Addr().String())
		u, err := net.ListenPacket("udp", "127.0.0.1:"+port)
		l.Close()
		if err == nil {
			u.Close()
			return port
		}
	}
	t.Fatal("no free port")
	return ""
}

// waitTCP waits until something accepts connections on addr.
func waitTCP(t testing.TB, p *proc, addr string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if p.exited() {
			t.Fatalf("%s exited: %v\n%s", p.name, p.err, p.output())
		}
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s does not listen on %s after 60 s\n%s", p.name, addr, p.output())
}

// countLines returns the number of complete lines in a file (0 when it
// does not exist yet).
func countLines(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	return bytes.Count(b, []byte{'\n'})
}

// waitLines waits until every file holds at least n lines. It fails when
// none of them grows for stall (a lost event never arrives; the test then
// reports which).
func waitLines(t testing.TB, n int, stall time.Duration, paths ...string) {
	t.Helper()
	last, since := -1, time.Now()
	for {
		total, done := 0, true
		for _, p := range paths {
			c := countLines(p)
			total += c
			done = done && c >= n
		}
		if done {
			return
		}
		if total != last {
			last, since = total, time.Now()
		} else if time.Since(since) > stall {
			var counts []string
			for _, p := range paths {
				counts = append(counts, fmt.Sprintf("%s: %d", filepath.Base(p), countLines(p)))
			}
			t.Logf("waiting for %d lines each, no progress for %s: %s", n, stall, strings.Join(counts, ", "))
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func mkdirs(t testing.TB, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}
