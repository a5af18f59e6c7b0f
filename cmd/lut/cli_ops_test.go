package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// tempFiles lists the temporary files lut leaves in dir (.NAME.tmp-*,
// .NAME.build-*).
func tempFiles(t *testing.T, dir string) []string {
	t.Helper()
	var found []string
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") && (strings.Contains(e.Name(), ".tmp") || strings.Contains(e.Name(), ".build-")) {
			found = append(found, e.Name())
		}
	}
	return found
}

// TestCompileInterrupted runs the built lut compiling an endless CSV from
// standard input, sends SIGINT (then, in a second run, SIGTERM) 2 s in,
// once the temporary table file exists: lut exits with 128+signal and no
// temporary file is left in the output directory.
var removedRE = regexp.MustCompile(`stopped, ([0-9]+) temporary files? removed`)

func TestCompileInterrupted(t *testing.T) {
	bin := lutBinary(t)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			dir := t.TempDir()
			cmd := exec.Command(bin, "compile", "--key", "id", "--out", filepath.Join(dir, "big.lut"), "-")
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			start := time.Now()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// Rows until lut stops reading (the pipe breaks).
			go func() {
				w := bufio.NewWriterSize(stdin, 1<<16)
				fmt.Fprintln(w, "id,name,email")
				for i := 0; ; i++ {
					if _, err := fmt.Fprintf(w, "%d,customer %d,c%d@example.com\n", i, i, i); err != nil {
						return
					}
				}
			}()
			deadline := time.Now().Add(2 * time.Minute)
			for len(tempFiles(t, dir)) == 0 {
				if time.Now().After(deadline) {
					_ = cmd.Process.Kill()
					t.Fatalf("no temporary file in %s after 2 minutes", dir)
				}
				time.Sleep(20 * time.Millisecond)
			}
			if d := 2*time.Second - time.Since(start); d > 0 {
				time.Sleep(d) // the interruption of the issue: at 2 s
			}
			if tmp := tempFiles(t, dir); len(tmp) == 0 {
				t.Fatal("the temporary file went away before the signal")
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			err = cmd.Wait()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 128+int(sig) {
				t.Fatalf("lut compile after %v: %v, want exit status %d\n%s", sig, err, 128+int(sig), stderr.String())
			}
			if left := tempFiles(t, dir); len(left) > 0 {
				t.Errorf("left after %v: %v", sig, left)
			}
			if _, err := os.Stat(filepath.Join(dir, "big.lut")); err == nil {
				t.Error("an interrupted compile left the table")
			}
			// The table's temporary file, and past 4,194,304 rows the
			// partitioned compile's spill file too.
			if m := removedRE.FindStringSubmatch(stderr.String()); m == nil || m[1] == "0" {
				t.Errorf("stderr: %q", stderr.String())
			}
		})
	}
}

// TestSignalMessage runs the built lut get, blocked writing rows to a
// pipe nobody reads (it writes no file), and sends SIGTERM: stderr gets
// "lut: terminated: stopped" with no count of temporary files and, not
// being a terminal, no escape sequence; on a terminal the line is erased
// first.
func TestSignalMessage(t *testing.T) {
	bin := lutBinary(t)
	dir := t.TempDir()
	table := filepath.Join(dir, "c.lut")
	src := filepath.Join(dir, "c.csv")
	writeCustomers(t, src, 2000, 1)
	mustRun(t, "compile", "--key", "Index", "--out", table, src)
	args := []string{"get", table}
	for i := 1; i <= 2000; i++ {
		args = append(args, fmt.Sprint(i)) // 2000 rows: far more than a pipe holds
	}
	// stopped runs lut get with stderr on stderr, waits until it is blocked
	// writing rows, sends SIGTERM and returns once it exited 143.
	stopped := func(stderr *os.File) {
		t.Helper()
		cmd := exec.Command(bin, args...)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Rows on stdout: lut runs, its signal handler installed; it
		// then fills the pipe and blocks.
		if _, err := out.Read(make([]byte, 1)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond)
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		err = cmd.Wait()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 128+int(syscall.SIGTERM) {
			t.Fatalf("lut get after SIGTERM: %v, want exit status %d", err, 128+int(syscall.SIGTERM))
		}
	}

	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stopped(w)
	w.Close()
	got, _ := io.ReadAll(r)
	r.Close()
	if string(got) != "lut: terminated: stopped\n" {
		t.Errorf("stderr on a pipe: %q, want %q", got, "lut: terminated: stopped\n")
	}

	m, s := openPTY(t)
	defer m.Close()
	var term bytes.Buffer
	done := make(chan struct{})
	go func() { _, _ = io.Copy(&term, m); close(done) }()
	stopped(s)
	s.Close()
	<-done
	if !strings.Contains(term.String(), "\r\033[Klut: terminated: stopped\r\n") {
		t.Errorf("stderr on a terminal: %q", term.String())
	}
}

// openPTY opens a pseudo-terminal pair: the master, read by the test, and
// the slave, a real terminal for the program.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	return m, s
}

// TestProgressTerminal runs the built lut compile and build with standard
// error on a pseudo-terminal (progress with a percentage and an ETA, as
// the input's size is known), on /dev/null and on a pipe (no progress:
// neither is a terminal, though /dev/null is a character device).
func TestProgressTerminal(t *testing.T) {
	bin := lutBinary(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "big.csv")
	writeCustomers(t, src, 400_000, 1)

	m, s := openPTY(t)
	defer m.Close()
	var got bytes.Buffer
	done := make(chan struct{})
	go func() { _, _ = io.Copy(&got, m); close(done) }() // ends with EIO once the slave closes
	cmd := exec.Command(bin, "compile", "--key", "Index", "--out", filepath.Join(dir, "t.lut"), src)
	cmd.Stderr = s
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	cfg := writeFile(t, filepath.Join(dir, "tables.yaml"), fmt.Sprintf("version: 1\ntables:\n  - name: a\n    kind: lut\n    sources: [%s]\n    key: Index\n  - name: b\n    kind: lut\n    sources: [%s]\n    key: Email\n    on_duplicate: first\n", src, src))
	cmd = exec.Command(bin, "build", cfg, "--out", filepath.Join(dir, "dist"))
	cmd.Stderr = s
	if out, err := cmd.Output(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	} else if !strings.Contains(string(out), filepath.Join(dir, "dist", "MANIFEST.json")+": 2 tables") {
		t.Errorf("build: %s", out)
	}
	s.Close()
	<-done
	term := got.String()
	for _, want := range []string{"rows/s", "%  ETA ", "] 100%", "/2 tables", "2/2 tables"} {
		if !strings.Contains(term, want) {
			t.Errorf("progress on a terminal lacks %q:\n%q", want, term)
		}
	}

	// onPTY runs lut with args, standard error on a pseudo-terminal, and
	// returns what was drawn there and what went to standard output.
	onPTY := func(args ...string) (term, stdout string) {
		t.Helper()
		m, s := openPTY(t)
		defer m.Close()
		var got bytes.Buffer
		done := make(chan struct{})
		go func() { _, _ = io.Copy(&got, m); close(done) }()
		cmd := exec.Command(bin, args...)
		cmd.Stderr = s
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("lut %v: %v\n%s", args, err, out)
		}
		s.Close()
		<-done
		return got.String(), string(out)
	}
	// lut verify draws its rows: the end of 400,000 is 100%.
	if v, out := onPTY("verify", filepath.Join(dir, "t.lut")); !strings.Contains(out, "ok (400000 rows") || !strings.Contains(v, "400000 rows") || !strings.Contains(v, "] 100%") {
		t.Errorf("lut verify's progress on a terminal lacks the rows and 100%%:\n%q\n%s", v, out)
	}
	// lut publish draws the artifacts sent, and its log lines are whole.
	if v, _ := onPTY("publish", filepath.Join(dir, "dist"), filepath.Join(dir, "www")); !strings.Contains(v, "2/2 artifacts") || !strings.Contains(v, "] 100%") || !strings.Contains(v, ".lut: uploaded (") {
		t.Errorf("lut publish's progress on a terminal lacks 2/2 artifacts, 100%% and an artifact's line:\n%q", v)
	}

	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	if isTerminal(null) {
		t.Error("/dev/null taken for a terminal")
	}
	cmd = exec.Command(bin, "compile", "--key", "Index", "--out", filepath.Join(dir, "u.lut"), src)
	var pipe bytes.Buffer
	cmd.Stderr = &pipe
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(pipe.String(), "\r") || strings.Contains(pipe.String(), "ETA") {
		t.Errorf("progress drawn on a pipe: %q", pipe.String())
	}
}

// TestDiffExitCode: diff --exit-code exits 1 when the tables differ (a
// changed value, an added key) and 0 when they are the same; without it,
// 0 either way.
func TestDiffExitCode(t *testing.T) {
	dir := t.TempDir()
	compileCSV := func(name, csv string) string {
		src := writeFile(t, filepath.Join(dir, name+".csv"), csv)
		out := filepath.Join(dir, name+".lut")
		mustRun(t, "compile", "--key", "k", "--out", out, src)
		return out
	}
	a := compileCSV("a", "k,v\n1,x\n2,y\n")
	same := compileCSV("same", "k,v\n2,y\n1,x\n")
	changed := compileCSV("changed", "k,v\n1,x\n2,z\n")
	added := compileCSV("added", "k,v\n1,x\n2,y\n3,w\n")
	for _, c := range []struct {
		b    string
		want int
	}{{same, 0}, {changed, 1}, {added, 1}} {
		out, _, code := run(t, "diff", "--exit-code", a, c.b)
		if code != c.want {
			t.Errorf("diff --exit-code %s: exit %d, want %d\n%s", filepath.Base(c.b), code, c.want, out)
		}
		if _, _, code := run(t, "diff", a, c.b); code != 0 {
			t.Errorf("diff %s: exit %d, want 0", filepath.Base(c.b), code)
		}
	}
}

// TestDataErrorExit: a row with the wrong number of fields fails the
// compile with exit status 1 (a data error) and its file:line:column; a
// usage error exits 2.
func TestDataErrorExit(t *testing.T) {
	dir := t.TempDir()
	src := writeFile(t, filepath.Join(dir, "bad.csv"), "k,v,w\n1,a,b\n2,c\n")
	_, stderr, code := run(t, "compile", "--key", "k", "--out", filepath.Join(dir, "t.lut"), src)
	if code != 1 || !strings.Contains(stderr, src+":3:4: expected 3 fields, found 2") {
		t.Errorf("field count: exit %d, %q", code, stderr)
	}
	_, stderr, code = run(t, "compile", "--key", "k", src)
	if code != 2 || !strings.Contains(stderr, "--out is required") {
		t.Errorf("usage: exit %d, %q", code, stderr)
	}
}

// TestInspectVersion: the writer lut inspect shows is the version and
// commit lut --version prints.
func TestInspectVersion(t *testing.T) {
	bin := lutBinary(t)
	dir := t.TempDir()
	src := writeFile(t, filepath.Join(dir, "t.csv"), "k,v\n1,a\n")
	tbl := filepath.Join(dir, "t.lut")
	if out, err := exec.Command(bin, "compile", "--key", "k", "--out", tbl, src).CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	ver, err := exec.Command(bin, "--version").Output()
	if err != nil || !strings.HasPrefix(string(ver), "lut v9.8.7-test (commit abc1234, ") {
		t.Fatalf("--version: %q %v", ver, err)
	}
	out, err := exec.Command(bin, "inspect", tbl).Output()
	if err != nil || !strings.Contains(string(out), "by lutkit v9.8.7-test (commit abc1234)") {
		t.Errorf("inspect: %v\n%s", err, out)
	}
}
