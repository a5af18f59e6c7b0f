// Package memcached runs real memcached clients against enrichd's
// read-only memcached listener, and compares what the listener answers
// with what a real memcached answers for the same keys. Each test names a
// row of docs/interop.md.
//
// TestMain builds the lut and enrichd binaries once; every test compiles a
// customers table with lut, starts enrichd on it with a memcached listener
// on 127.0.0.1, and drives it with the client under test. A client that is
// not installed fails the test under CI=true and skips it otherwise.
package memcached

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"

	"github.com/lutkit/lutkit/internal/testfiles"
)

// bin holds the lut and enrichd binaries built by TestMain.
var bin string

// wantVersion is what enrichd answers to "version": the memcached version
// whose protocols it speaks first, in the major.minor.micro form that
// libmemcached parses, then the server's name.
const wantVersion = "1.6.18-lutkit"

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "lutkit-interop-memcached-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	root, err := testfiles.Root()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	build := exec.Command("go", "build", "-o", dir+string(filepath.Separator), "./cmd/lut", "./cmd/enrichd")
	build.Dir = root
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building lut and enrichd:", err)
		return 1
	}
	bin = dir
	return m.Run()
}

// need returns the path of program, or ends the test (a failure under
// CI=true) when it is not installed; pkg is the Debian package to install.
func need(t testing.TB, program, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(program)
	if err != nil {
		testfiles.Missing(t, fmt.Sprintf("%s (Debian package %s, listed in .ci/apt-packages)", program, pkg))
	}
	return p
}

// needPython checks that Debian's python3 has module mod.
func needPython(t testing.TB, mod, pkg string) string {
	t.Helper()
	py := "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		testfiles.Missing(t, "/usr/bin/python3 (Debian package python3)")
	}
	if out, err := exec.Command(py, "-c", "import "+mod).CombinedOutput(); err != nil {
		testfiles.Missing(t, fmt.Sprintf("python module %s for /usr/bin/python3 (Debian package %s): %s", mod, pkg, bytes.TrimSpace(out)))
	}
	return py
}

// needRuby checks that ruby can load library lib.
func needRuby(t testing.TB, lib, pkg string) string {
	t.Helper()
	rb := need(t, "ruby", "ruby")
	if out, err := exec.Command(rb, "-r"+lib, "-e", "").CombinedOutput(); err != nil {
		testfiles.Missing(t, fmt.Sprintf("ruby library %s (Debian package %s): %s", lib, pkg, bytes.TrimSpace(out)))
	}
	return rb
}

// row is one customer of the test table.
type row struct{ cust, name, tier, note string }

// customers are the rows of the test table: key 42 is the one the issue
// names, 7 holds characters JSON escapes, 9000 a value larger than a
// client's usual read buffer.
func customers() []row {
	rows := make([]row, 0, 210)
	for i := 1; i <= 200; i++ {
		rows = append(rows, row{strconv.Itoa(i), "Customer " + strconv.Itoa(i), []string{"gold", "silver", "bronze"}[i%3], ""})
	}
	rows[41].name = "Acme Widgets"
	rows[6].note = `say "hi" \ back, é, tab	end`
	rows = append(rows, row{"9000", "Big", "gold", strings.Repeat("0123456789abcdef", 1280)})
	return rows
}

func writeCSV(t testing.TB, path string) {
	t.Helper()
	var b strings.Builder
	b.WriteString("cust,name,tier,note\n")
	q := func(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
	for _, r := range customers() {
		fmt.Fprintf(&b, "%s,%s,%s,%s\n", r.cust, q(r.name), r.tier, q(r.note))
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// enrichdOpts shape the memcached section of the configuration.
type enrichdOpts struct {
	defaultTable string
	extra        string // more YAML lines for the memcached section ("    key: value")
	// tables, when set, adds tables to the directory enrichd serves.
	tables func(dir string)
}

// startEnrichd compiles the customers table with lut, starts enrichd with
// a memcached listener and returns its address once it answers.
func startEnrichd(t testing.TB, o enrichdOpts) string {
	t.Helper()
	dir := t.TempDir()
	tables := filepath.Join(dir, "tables")
	if err := os.Mkdir(tables, 0o755); err != nil {
		t.Fatal(err)
	}
	writeCSV(t, filepath.Join(dir, "customers.csv"))
	if out, err := exec.Command(filepath.Join(bin, "lut"), "compile", "--key", "cust",
		"--out", filepath.Join(tables, "customers.lut"), filepath.Join(dir, "customers.csv")).CombinedOutput(); err != nil {
		t.Fatalf("lut compile: %v\n%s", err, out)
	}
	if o.tables != nil {
		o.tables(tables)
	}
	for attempt := 0; ; attempt++ {
		port := freePort(t)
		addr := "127.0.0.1:" + port
		cfg := fmt.Sprintf("tables: {path: tables}\nmemcached:\n  listen: %q\n", addr)
		if o.defaultTable != "" {
			cfg += fmt.Sprintf("  default_table: %s\n", o.defaultTable)
		}
		cfg += o.extra
		cfgPath := filepath.Join(dir, "enrichd.yaml")
		if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		var stderr bytes.Buffer
		cmd := exec.Command(filepath.Join(bin, "enrichd"), "--config", cfgPath)
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		var waitErr error
		go func() { waitErr = cmd.Wait(); close(exited) }()
		stop := func() error {
			if err := cmd.Process.Signal(os.Interrupt); err != nil && !errors.Is(err, os.ErrProcessDone) {
				return err
			}
			select {
			case <-exited:
				return waitErr
			case <-time.After(10 * time.Second):
				_ = cmd.Process.Kill() // killed or gone: Wait reaps it
				<-exited
				return errors.New("did not stop within 10s of SIGINT")
			}
		}
		if waitServing(addr, exited) {
			t.Cleanup(func() {
				if err := stop(); err != nil {
					t.Errorf("enrichd: %v", err)
				}
				if t.Failed() {
					t.Logf("enrichd stderr:\n%s", stderr.String())
				}
			})
			return addr
		}
		// Not serving, most likely because the port was taken meanwhile:
		// how it ended is in stderr, shown after the last attempt.
		_ = stop()
		if attempt == 2 {
			t.Fatalf("enrichd did not serve memcached on %s:\n%s", addr, stderr.String())
		}
	}
}

// startMemcached starts Debian's memcached on 127.0.0.1 (TCP only) and
// returns its address.
func startMemcached(t testing.TB, args ...string) string {
	t.Helper()
	mc := need(t, "memcached", "memcached")
	for attempt := 0; ; attempt++ {
		port := freePort(t)
		addr := "127.0.0.1:" + port
		cmd := exec.Command(mc, append([]string{"-U", "0", "-l", "127.0.0.1", "-p", port}, args...)...)
		if os.Geteuid() == 0 {
			cmd.Args = append(cmd.Args, "-u", "nobody")
		}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		// Killed, memcached has nothing to report: Wait only reaps it.
		go func() { _ = cmd.Wait(); close(exited) }()
		stop := func() {
			_ = cmd.Process.Kill() // gone already when it failed to start
			<-exited
		}
		if waitServing(addr, exited) {
			t.Cleanup(stop)
			return addr
		}
		stop()
		if attempt == 2 {
			t.Fatalf("memcached did not start on %s:\n%s", addr, stderr.String())
		}
	}
}

// freePort returns a port that was free a moment ago.
func freePort(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}

// waitServing waits until addr answers "version" (false if the process
// exits first or 15 s pass).
func waitServing(addr string, exited <-chan struct{}) bool {
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return false
		default:
		}
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			err = c.SetDeadline(time.Now().Add(2 * time.Second))
			if err == nil {
				_, err = c.Write([]byte("version\r\n"))
			}
			var line string
			if err == nil {
				line, err = bufio.NewReader(c).ReadString('\n')
			}
			c.Close()
			if err == nil && strings.HasPrefix(line, "VERSION ") {
				return true
			}
		}
		time.Sleep(30 * time.Millisecond)
	}
	return false
}

// value returns what enrichd answers for key (read with gomemcache over
// the text protocol); ok is false on a miss.
func value(t testing.TB, addr, key string) ([]byte, bool) {
	t.Helper()
	it, err := memcache.New(addr).Get(key)
	if errors.Is(err, memcache.ErrCacheMiss) {
		return nil, false
	}
	if err != nil {
		t.Fatalf("get %s from %s: %v", key, addr, err)
	}
	return it.Value, true
}

// digest is how the client scripts print a value: LENGTH:SHA256.
func digest(v []byte) string {
	return fmt.Sprintf("%d:%x", len(v), sha256.Sum256(v))
}

// mirror stores in the memcached at real the values enrichd at ours
// answers for keys (flags 0, no expiry), so that both hold the same items.
func mirror(t testing.TB, ours, real string, keys ...string) {
	t.Helper()
	rc := memcache.New(real)
	for _, k := range keys {
		v, ok := value(t, ours, k)
		if !ok {
			t.Fatalf("enrichd has no %s", k)
		}
		if err := rc.Set(&memcache.Item{Key: k, Value: v}); err != nil {
			t.Fatalf("set %s in memcached: %v", k, err)
		}
	}
}

// script runs a client program with a deadline and returns its stdout; a
// failure reports its stderr.
func script(t testing.TB, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\nstdout:\n%s\nstderr:\n%s", name, err, stdout.String(), stderr.String())
	}
	if stderr.Len() > 0 {
		t.Logf("%s stderr:\n%s", name, stderr.String())
	}
	return stdout.String()
}
