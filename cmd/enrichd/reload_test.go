package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lutkit/lutkit/compile"
	"github.com/lutkit/lutkit/compile/source"
	"github.com/lutkit/lutkit/internal/syncbuf"
)

// TestMain runs the command itself when ENRICHD_TEST_RUN_MAIN=1, so that
// tests can start enrichd as a process of its own and send it signals.
func TestMain(m *testing.M) {
	if os.Getenv("ENRICHD_TEST_RUN_MAIN") == "1" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// lockedBuffer collects a process's stderr.
type lockedBuffer = syncbuf.Buffer

// daemonProcess is enrichd running as a process of its own.
type daemonProcess struct {
	cmd    *exec.Cmd
	stderr *lockedBuffer
	http   string
}

// startProcess runs enrichd with args and waits until /readyz at
// httpAddr answers 200.
func startProcess(t *testing.T, httpAddr string, args ...string) *daemonProcess {
	t.Helper()
	p := launchProcess(t, httpAddr, args...)
	p.waitStatus(t, "/readyz", http.StatusOK)
	return p
}

// launchProcess runs enrichd with args, serving HTTP at httpAddr, killed
// when the test ends if it still runs; it does not wait for the start.
func launchProcess(t *testing.T, httpAddr string, args ...string) *daemonProcess {
	t.Helper()
	p := &daemonProcess{stderr: &lockedBuffer{}, http: httpAddr}
	p.cmd = exec.Command(os.Args[0], args...)
	p.cmd.Env = append(os.Environ(), "ENRICHD_TEST_RUN_MAIN=1")
	p.cmd.Stderr = p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			_ = p.cmd.Process.Kill()
			_ = p.cmd.Wait()
		}
	})
	return p
}

// get returns the status and body of a GET of path.
func (p *daemonProcess) get(path string) (int, string, error) {
	resp, err := http.Get("http://" + p.http + path)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// waitStatus polls path until it answers code.
func (p *daemonProcess) waitStatus(t *testing.T, path string, code int) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; {
		if c, _, err := p.get(path); err == nil && c == code {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never answered %d; stderr:\n%s", path, code, p.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitLog waits until stderr holds n lines containing s.
func (p *daemonProcess) waitLog(t *testing.T, s string, n int) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); strings.Count(p.stderr.String(), s) < n; {
		if time.Now().After(deadline) {
			t.Fatalf("no %d log lines %q; stderr:\n%s", n, s, p.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop sends SIGTERM and waits for the exit.
func (p *daemonProcess) stop(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("exit: %v; stderr:\n%s", err, p.stderr.String())
	}
}

// TestSIGHUPReload: SIGHUP reloads the configuration file of a running
// enrichd process: new rules apply on the same TCP connection, a bad
// file is refused (logged) and the rules running stay, and
// enrichd_config_reloads_total counts both.
func TestSIGHUPReload(t *testing.T) {
	dir := t.TempDir()
	tdir := filepath.Join(dir, "tables")
	if err := os.Mkdir(tdir, 0o755); err != nil {
		t.Fatal(err)
	}
	src, err := source.NewCSVReader(strings.NewReader("Index,Email,Name\n1,a@b,Ann\n"), "c.csv", source.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := compile.File(src, filepath.Join(tdir, "customers.lut"), compile.Options{Key: []string{"Index"}}); err != nil {
		t.Fatal(err)
	}
	tcpAddr, httpAddr := freePort(t), freePort(t)
	out := filepath.Join(dir, "out.json")
	cfgPath := filepath.Join(dir, "enrichd.yaml")
	write := func(target string) {
		writeFile(t, cfgPath, fmt.Sprintf("inputs: [{type: tcp, listen: %q}]\noutputs: [{type: file, path: out.json}]\n"+
			"tables: {path: tables}\nhttp: {listen: %q}\nrules:\n  - {table: customers, field: cust, target: %s, columns: [Name]}\n", tcpAddr, httpAddr, target))
	}
	write("a")
	p := startProcess(t, httpAddr, "--config", cfgPath)
	c, err := net.Dial("tcp", tcpAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	lines := 0
	sendAndRead := func() string {
		t.Helper()
		if _, err := fmt.Fprintf(c, "<13>1 2026-11-30T06:16:21Z h app - - - cust=1 n=%d\n", lines); err != nil {
			t.Fatal(err)
		}
		lines++
		for deadline := time.Now().Add(time.Minute); ; {
			b, _ := os.ReadFile(out)
			if ls := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n"); len(b) > 0 && len(ls) == lines {
				return ls[lines-1]
			}
			if time.Now().After(deadline) {
				t.Fatalf("output has not %d lines:\n%s\nstderr:\n%s", lines, b, p.stderr.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if l := sendAndRead(); !strings.Contains(l, `"a":{"Name":"Ann"}`) {
		t.Fatalf("before the reload: %s", l)
	}
	write("b")
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	p.waitLog(t, "configuration reloaded", 1)
	if l := sendAndRead(); !strings.Contains(l, `"b":{"Name":"Ann"}`) || strings.Contains(l, `"a":`) {
		t.Fatalf("after the reload: %s", l)
	}
	writeFile(t, cfgPath, "inputs: [{type: tcp, listen: \"127.0.0.1:99999\"}]\n")
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	p.waitLog(t, "configuration reload refused", 1)
	if !strings.Contains(p.stderr.String(), `inputs[0].listen: must be HOST:PORT with a port from 0 to 65535`) {
		t.Fatalf("the errors are not logged:\n%s", p.stderr.String())
	}
	if l := sendAndRead(); !strings.Contains(l, `"b":{"Name":"Ann"}`) {
		t.Fatalf("after a refused reload: %s", l)
	}
	_, body, err := p.get("/metrics")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`enrichd_config_reloads_total{result="success"} 1`, `enrichd_config_reloads_total{result="failure"} 1`} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	c.Close()
	p.stop(t)
	sc := bufio.NewScanner(strings.NewReader(p.stderr.String()))
	for sc.Scan() {
		if strings.Contains(sc.Text(), `"level":"ERROR"`) && !strings.Contains(sc.Text(), "configuration reload refused") {
			t.Errorf("unexpected error: %s", sc.Text())
		}
	}
}

// TestWatchConfig: with --watch-config a change of the file reloads it,
// with no signal; the new rules apply.
func TestWatchConfig(t *testing.T) {
	dir := t.TempDir()
	tdir := filepath.Join(dir, "tables")
	if err := os.Mkdir(tdir, 0o755); err != nil {
		t.Fatal(err)
	}
	src, err := source.NewCSVReader(strings.NewReader("Index,Name\n1,Ann\n"), "c.csv", source.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := compile.File(src, filepath.Join(tdir, "customers.lut"), compile.Options{Key: []string{"Index"}}); err != nil {
		t.Fatal(err)
	}
	tcpAddr, httpAddr := freePort(t), freePort(t)
	cfgPath := filepath.Join(dir, "enrichd.yaml")
	write := func(target string) {
		writeFile(t, cfgPath, fmt.Sprintf("inputs: [{type: tcp, listen: %q}]\noutputs: [{type: file, path: out.json}]\n"+
			"tables: {path: tables}\nhttp: {listen: %q}\nrules:\n  - {table: customers, field: cust, target: %s, columns: [Name]}\n", tcpAddr, httpAddr, target))
	}
	write("a")
	p := startProcess(t, httpAddr, "--config", cfgPath, "--watch-config")
	write("b")
	p.waitLog(t, "configuration reloaded", 1)
	p.sendWait(t, tcpAddr, "<13>1 2026-11-30T06:16:21Z h app - - - cust=1", filepath.Join(dir, "out.json"), `"b":{"Name":"Ann"}`)
	p.stop(t)
}

// sendWait sends line over a new TCP connection to addr and waits until
// the file at out holds want.
func (p *daemonProcess) sendWait(t *testing.T, addr, line, out, want string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fmt.Fprintf(c, "%s\n", line); err != nil {
		t.Fatal(err)
	}
	c.Close()
	for deadline := time.Now().Add(time.Minute); ; {
		b, _ := os.ReadFile(out)
		if strings.Contains(string(b), want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s holds no %s:\n%s\nstderr:\n%s", out, want, b, p.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
