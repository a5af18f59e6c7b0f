package main

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// outputCommands are the commands that write a file, each with its
// output flag given path.
func outputCommands(dir, path string) map[string][]string {
	src := filepath.Join(dir, "s.csv")
	nets := filepath.Join(dir, "n.csv")
	table := filepath.Join(dir, "s.lut")
	return map[string][]string{
		"export csv":       {"export", table, "-o", path},
		"export parquet":   {"export", table, "--format", "parquet", "--out", path},
		"compile lut":      {"compile", "--key", "k", "--out", path, src},
		"compile mmdb":     {"compile", "--mmdb", "--network", "net", "--out", path, nets},
		"sample customers": {"sample", "customers", "50", "--out", path},
		"sample sites":     {"sample", "sites", "4", "--out", path},
		"sample domains":   {"sample", "domains", "50", "--out", path},
		"sample events":    {"sample", "events", "50", "--out", path},
	}
}

// outputFixture writes the inputs of outputCommands into dir.
func outputFixture(t *testing.T, dir string) {
	t.Helper()
	src := writeFile(t, filepath.Join(dir, "s.csv"), "k,v\na,1\nb,2\nc,3\n")
	writeFile(t, filepath.Join(dir, "n.csv"), "net,site\n10.0.0.0/8,a\n192.168.0.0/16,b\n")
	mustRun(t, "compile", "--key", "k", "--out", filepath.Join(dir, "s.lut"), src)
}

// TestOutputFullDevice: an output that is a character device (our own
// node of the full device) is written into, not replaced; its ENOSPC
// fails the command (exit 2) with the error.
func TestOutputFullDevice(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("TMPDIR", t.TempDir())
	outputFixture(t, dir)
	full := filepath.Join(dir, "fulldev")
	if err := syscall.Mknod(full, syscall.S_IFCHR|0o666, 1<<8|7); err != nil {
		t.Skipf("mknod: %v", err)
	}
	for name, args := range outputCommands(dir, full) {
		_, stderr, code := run(t, args...)
		if code != 2 || !strings.Contains(stderr, "write "+full+": no space left on device") {
			t.Errorf("%s: exit %d, stderr %q; want exit 2 and ENOSPC", name, code, stderr)
		}
		if fi, err := os.Lstat(full); err != nil || fi.Mode()&os.ModeCharDevice == 0 {
			t.Fatalf("%s: the device was replaced: %v, %v", name, fi.Mode(), err)
		}
	}
	if left := tempFiles(t, dir); len(left) > 0 {
		t.Errorf("left: %v", left)
	}
}

// TestOutputFIFO: an output that is a named pipe is written into: its
// reader gets what a regular file would hold (a .lut and an .mmdb table
// byte for byte, as both are reproducible), and it stays a pipe.
func TestOutputFIFO(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("SOURCE_DATE_EPOCH", "1700000000")
	outputFixture(t, dir)
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for name, args := range outputCommands(dir, fifo) {
		got := make(chan []byte, 1)
		go func() {
			f, err := os.Open(fifo)
			if err != nil {
				got <- nil
				return
			}
			defer f.Close()
			b, _ := io.ReadAll(f)
			got <- b
		}()
		if _, stderr, code := run(t, args...); code != 0 {
			t.Fatalf("%s: exit %d: %s", name, code, stderr)
		}
		var b []byte
		select {
		case b = <-got:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: the pipe's reader got nothing in 10 s", name)
		}
		ref := filepath.Join(dir, "ref")
		for i, a := range args {
			if a == fifo {
				args[i] = ref
			}
		}
		mustRun(t, args...)
		want, err := os.ReadFile(ref)
		if err != nil {
			t.Fatal(err)
		}
		if len(want) == 0 || !bytes.Equal(b, want) {
			t.Errorf("%s: the pipe's reader got %d bytes, a file holds %d, not the same", name, len(b), len(want))
		}
		if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
			t.Fatalf("%s: the pipe was replaced: %v, %v", name, fi.Mode(), err)
		}
		os.Remove(ref)
	}
	if left := tempFiles(t, dir); len(left) > 0 {
		t.Errorf("left: %v", left)
	}
}

// TestOutputStdoutLink runs the built lut with -o a link to
// /proc/self/fd/1: what it writes reaches its standard output, and the
// link stays.
func TestOutputStdoutLink(t *testing.T) {
	bin := lutBinary(t)
	if _, err := os.Stat("/proc/self/fd/1"); err != nil {
		t.Skip("no /proc/self/fd")
	}
	dir := t.TempDir()
	outputFixture(t, dir)
	link := filepath.Join(dir, "mystdout")
	if err := os.Symlink("/proc/self/fd/1", link); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"export", filepath.Join(dir, "s.lut"), "-o", link},
		{"sample", "customers", "3", "--out", link},
		{"compile", "--key", "k", "--out", link, filepath.Join(dir, "s.csv")},
	} {
		cmd := exec.Command(bin, args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("lut %v: %v\n%s", args, err, stderr.String())
		}
		want := "k,v\na,1\n"
		switch args[0] {
		case "sample":
			want = "Index,Customer Id,"
		case "compile":
			want = "\x89LUT"
		}
		if !strings.HasPrefix(string(out), want) {
			t.Errorf("lut %v: stdout %.40q, want %q first", args, out, want)
		}
		if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Fatalf("lut %v: the link was replaced: %v, %v", args, fi.Mode(), err)
		}
	}
}

// TestOutputThroughLink: an output that is a link to a regular file (or a
// dangling link) stays a link; the file it names gets the output.
func TestOutputThroughLink(t *testing.T) {
	dir := t.TempDir()
	outputFixture(t, dir)
	real := filepath.Join(dir, "real")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	target := writeFile(t, filepath.Join(real, "out.csv"), "old\n")
	link := filepath.Join(dir, "link.csv")
	dangling := filepath.Join(dir, "dangling.csv")
	for _, l := range [][2]string{{"real/out.csv", link}, {"real/new.csv", dangling}} {
		if err := os.Symlink(l[0], l[1]); err != nil {
			t.Fatal(err)
		}
	}
	mustRun(t, "export", filepath.Join(dir, "s.lut"), "-o", link)
	mustRun(t, "sample", "customers", "3", "--out", dangling)
	if b, _ := os.ReadFile(target); string(b) != "k,v\na,1\nb,2\nc,3\n" {
		t.Errorf("the link's target holds %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(real, "new.csv")); !strings.HasPrefix(string(b), "Index,Customer Id,") {
		t.Errorf("the dangling link's target holds %q", b)
	}
	for _, l := range []string{link, dangling} {
		if fi, err := os.Lstat(l); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Errorf("%s was replaced: %v, %v", l, fi.Mode(), err)
		}
	}
	if left := append(tempFiles(t, dir), tempFiles(t, real)...); len(left) > 0 {
		t.Errorf("left: %v", left)
	}
}

// TestOutputIsInput: an output that is one of the command's inputs (by
// its name, a link or a hard link) is refused before anything is written:
// exit 2, the input unchanged, no temporary file.
func TestOutputIsInput(t *testing.T) {
	dir := t.TempDir()
	outputFixture(t, dir)
	src, nets, table := filepath.Join(dir, "s.csv"), filepath.Join(dir, "n.csv"), filepath.Join(dir, "s.lut")
	base := filepath.Join(dir, "base.mmdb")
	mustRun(t, "compile", "--network", "net", "--out", base, nets)
	link := filepath.Join(dir, "link.csv")
	if err := os.Symlink("s.csv", link); err != nil {
		t.Fatal(err)
	}
	hard := filepath.Join(dir, "hard.lut")
	if err := os.Link(table, hard); err != nil {
		t.Fatal(err)
	}
	before := map[string]string{}
	for _, p := range []string{src, nets, table, base} {
		before[p] = sha(t, p)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"export", table, "-o", table}, "export: the output " + table + " is also an input: refusing to overwrite it"},
		{[]string{"export", table, "--format", "parquet", "--out", hard}, "export: the output " + hard + " is the input " + table},
		{[]string{"compile", "--key", "k", "--out", src, src}, "compile: the output " + src + " is also an input"},
		{[]string{"compile", "--key", "k", "--out", link, src}, "compile: the output " + link + " is the input " + src},
		{[]string{"compile", "--key", "k", "--out", src, "--password-file", src, "--postgres", "postgres://u@127.0.0.1:1/db", "--query", "SELECT 1"}, "compile: the output " + src + " is also an input"},
		{[]string{"compile", "--mmdb", "--network", "net", "--out", nets, nets}, "compile: the output " + nets + " is also an input"},
		{[]string{"compile", "--network", "net", "--ioc", "bad=" + src, "--out", src, nets}, "compile: the output " + src + " is also an input"},
	} {
		_, stderr, code := run(t, c.args...)
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("lut %s: exit %d, stderr %q; want exit 2 and %q", strings.Join(c.args, " "), code, stderr, c.want)
		}
	}
	for p, s := range before {
		if sha(t, p) != s {
			t.Errorf("%s was changed", p)
		}
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced: %v", err)
	}
	if left := tempFiles(t, dir); len(left) > 0 {
		t.Errorf("left: %v", left)
	}
	// An .mmdb read as a layer may be the output: it is updated in place.
	more := filepath.Join(dir, "more.txt")
	writeFile(t, more, "192.0.2.7\n")
	mustRun(t, "compile", "--base", base, "--ioc", "more="+more, "--out", base)
	if sha(t, base) == before[base] {
		t.Errorf("--base %s --out %s left it unchanged", base, base)
	}
	if out, stderr, code := run(t, "get", base, "192.0.2.7"); code != 0 || !strings.Contains(out, `"list":"more"`) {
		t.Errorf("get 192.0.2.7 in the updated file: exit %d, %s%s", code, out, stderr)
	}
}
