// Package dbtest starts real database servers for tests and benchmarks:
// PostgreSQL (Debian's postgresql package) and MariaDB (mariadb-server),
// each a private instance in a temporary directory, listening on a free
// port of 127.0.0.1 with a password-protected user, and stopped when the
// test ends. A missing server program fails the test under CI=true and
// skips it otherwise (testfiles.Missing).
//
// PostgreSQL refuses to run as root: as root the server runs as the
// "postgres" user the package creates (or "nobody").
package dbtest

import (
	"net"
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/lutkit/lutkit/internal/syncbuf"
)

// Password is the password of the servers' test user.
const Password = "lut-s3cret-Pw"

// User and Database are the test user and its database on both servers.
const (
	User     = "lutkit"
	Database = "lut"
)

// startTimeout bounds how long a server may take to start or stop on a
// loaded machine.
const startTimeout = 2 * time.Minute

// freePort returns a port of 127.0.0.1 that was free a moment ago.
func freePort(tb testing.TB) int {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// server is a running server process.
type server struct {
	cmd  *exec.Cmd
	log  *lockedBuffer
	done chan struct{}
	err  error
}

// lockedBuffer collects a process's output.
type lockedBuffer = syncbuf.Buffer

// start runs cmd as a server; stop signal sig ends it at cleanup.
func start(tb testing.TB, cmd *exec.Cmd, sig os.Signal) *server {
	tb.Helper()
	s := &server{cmd: cmd, log: &lockedBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = s.log, s.log
	if err := cmd.Start(); err != nil {
		tb.Fatalf("%s: %v", cmd.Path, err)
	}
	go func() {
		s.err = cmd.Wait()
		close(s.done)
	}()
	tb.Cleanup(func() {
		_ = cmd.Process.Signal(sig)
		select {
		case <-s.done:
		case <-time.After(startTimeout):
			_ = cmd.Process.Kill()
			<-s.done
			tb.Errorf("%s did not stop in %v; killed", cmd.Path, startTimeout)
		}
	})
	return s
}

// waitReady polls ready until it succeeds, the server exits or the
// deadline passes.
func (s *server) waitReady(tb testing.TB, ready func() error) {
	tb.Helper()
	deadline := time.Now().Add(startTimeout)
	for {
		err := ready()
		if err == nil {
			return
		}
		select {
		case <-s.done:
			tb.Fatalf("%s exited (%v) before it was ready:\n%s", s.cmd.Path, s.err, s.log.String())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%s not ready after %v: %v\n%s", s.cmd.Path, startTimeout, err, s.log.String())
		}
	}
}

// run runs a setup program, failing the test with its output.
func run(tb testing.TB, cmd *exec.Cmd) {
	tb.Helper()
	out, err := cmd.CombinedOutput()
	if err != nil {
		tb.Fatalf("%s: %v\n%s", cmd, err, out)
	}
}

// unprivileged returns the credential to run a server as when the test
// runs as root (nil otherwise), and chowns the paths to it.
func unprivileged(tb testing.TB, paths ...string) *syscall.SysProcAttr {
	tb.Helper()
	if os.Geteuid() != 0 {
		return nil
	}
	var u *user.User
	for _, name := range []string{"postgres", "nobody"} {
		if found, err := user.Lookup(name); err == nil {
			u = found
			break
		}
	}
	if u == nil {
		tb.Fatal("running as root, and neither a postgres nor a nobody user to run the server as")
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	for _, p := range paths {
		if err := os.Chown(p, uid, gid); err != nil {
			tb.Fatal(err)
		}
	}
	return &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
}

// tempDir makes a directory the server's user can use, removed at
// cleanup. (t.TempDir's directories are private to the test's user.)
func tempDir(tb testing.TB, prefix string) string {
	tb.Helper()
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func writeFile(tb testing.TB, path, data string) {
	tb.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		tb.Fatal(err)
	}
}
