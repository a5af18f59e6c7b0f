//go:build unix

package fsutil

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// writers are WriteFile and WriteStream, writing s.
var writers = []struct {
	name  string
	write func(path, s string) error
}{
	{"WriteFile", func(path, s string) error {
		return WriteFile(path, func(f *os.File) error {
			if _, err := f.WriteString(s); err != nil {
				return err
			}
			// What WriteFile hands out is a regular file: it can be
			// read back (as the compilers do).
			b := make([]byte, len(s))
			if _, err := f.ReadAt(b, 0); err != nil {
				return err
			}
			if string(b) != s {
				return fmt.Errorf("read back %q", b)
			}
			return nil
		})
	}},
	{"WriteStream", func(path, s string) error {
		return WriteStream(path, func(w io.Writer) error {
			_, err := io.WriteString(w, s)
			return err
		})
	}},
}

// noTemps fails if dir holds a temporary file of WriteFile.
func noTemps(t *testing.T, dirs ...string) {
	t.Helper()
	for _, dir := range dirs {
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			if strings.Contains(e.Name(), ".tmp-") {
				t.Errorf("left in %s: %s", dir, e.Name())
			}
		}
	}
}

// TestWriteDevice: a character device at the path (our own node of the
// full device, which refuses every write with ENOSPC) is written into and
// stays a device; the error comes back.
func TestWriteDevice(t *testing.T) {
	for _, w := range writers {
		t.Run(w.name, func(t *testing.T) {
			dir, scratch := t.TempDir(), t.TempDir()
			t.Setenv("TMPDIR", scratch) // WriteFile's scratch file
			full := filepath.Join(dir, "full")
			if err := syscall.Mknod(full, syscall.S_IFCHR|0o666, 1<<8|7); err != nil {
				t.Skipf("mknod: %v", err)
			}
			link := filepath.Join(dir, "link")
			if err := os.Symlink("full", link); err != nil {
				t.Fatal(err)
			}
			for _, p := range []string{full, link} {
				err := w.write(p, strings.Repeat("x", 1<<16))
				if !errors.Is(err, syscall.ENOSPC) {
					t.Errorf("%s: err = %v, want ENOSPC", p, err)
				}
			}
			if fi, err := os.Lstat(full); err != nil || fi.Mode()&os.ModeCharDevice == 0 {
				t.Errorf("the device was replaced: %v %v", fi.Mode(), err)
			}
			if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
				t.Errorf("the link was replaced: %v %v", fi.Mode(), err)
			}
			noTemps(t, dir, scratch)
		})
	}
}

// TestWriteFIFO: a named pipe at the path (or a link to one, as
// /dev/stdout is a link to /proc/self/fd/1) is written into: its reader
// gets the bytes and it stays a pipe.
func TestWriteFIFO(t *testing.T) {
	for _, w := range writers {
		t.Run(w.name, func(t *testing.T) {
			dir, scratch := t.TempDir(), t.TempDir()
			t.Setenv("TMPDIR", scratch)
			fifo := filepath.Join(dir, "fifo")
			if err := syscall.Mkfifo(fifo, 0o644); err != nil {
				t.Fatal(err)
			}
			got := make(chan string, 1)
			go func() {
				f, err := os.Open(fifo)
				if err != nil {
					got <- err.Error()
					return
				}
				defer f.Close()
				b, _ := io.ReadAll(f)
				got <- string(b)
			}()
			if err := w.write(fifo, "hello"); err != nil {
				t.Fatal(err)
			}
			if s := <-got; s != "hello" {
				t.Errorf("the reader got %q", s)
			}
			if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
				t.Errorf("the pipe was replaced: %v %v", fi.Mode(), err)
			}
			noTemps(t, dir, scratch)
		})
	}
}

// TestWriteStdoutLink: a link to /proc/self/fd/N (N a pipe) is written
// into, as "lut export -o mystdout" with mystdout -> /proc/self/fd/1.
func TestWriteStdoutLink(t *testing.T) {
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		t.Skip("no /proc/self/fd")
	}
	for _, w := range writers {
		t.Run(w.name, func(t *testing.T) {
			r, pw, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			dir := t.TempDir()
			link := filepath.Join(dir, "mystdout")
			if err := os.Symlink(fmt.Sprintf("/proc/self/fd/%d", pw.Fd()), link); err != nil {
				t.Fatal(err)
			}
			err = w.write(link, "to the pipe")
			pw.Close()
			if err != nil {
				t.Fatal(err)
			}
			if b, _ := io.ReadAll(r); string(b) != "to the pipe" {
				t.Errorf("the pipe got %q", b)
			}
			if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
				t.Errorf("the link was replaced: %v %v", fi.Mode(), err)
			}
			noTemps(t, dir)
		})
	}
}

// TestWriteThroughLinks: a link to a regular file, a chain of links, a
// relative link through a linked directory and a dangling link stay
// links; the file they name gets the bytes, renamed into its directory.
func TestWriteThroughLinks(t *testing.T) {
	for _, w := range writers {
		t.Run(w.name, func(t *testing.T) {
			dir := t.TempDir()
			must := func(err error) {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
			}
			real, other := filepath.Join(dir, "real"), filepath.Join(dir, "other")
			must(os.MkdirAll(filepath.Join(real, "sub"), 0o755))
			must(os.Mkdir(other, 0o755))
			target := filepath.Join(real, "t.csv")
			must(os.WriteFile(target, []byte("old"), 0o600))
			// other/link -> ../real/t.csv; other/chain -> link.
			must(os.Symlink("../real/t.csv", filepath.Join(other, "link")))
			must(os.Symlink("link", filepath.Join(other, "chain")))
			// other/sublink -> real/sub (a directory); other/up ->
			// sublink/../t.csv, which the kernel resolves to real/t.csv,
			// not to other/t.csv.
			must(os.Symlink(filepath.Join(real, "sub"), filepath.Join(other, "sublink")))
			must(os.Symlink("sublink/../t.csv", filepath.Join(other, "up")))
			for i, name := range []string{"link", "chain", "up"} {
				p := filepath.Join(other, name)
				want := fmt.Sprintf("v%d", i)
				must(w.write(p, want))
				if fi, err := os.Lstat(p); err != nil || fi.Mode()&os.ModeSymlink == 0 {
					t.Errorf("%s was replaced: %v %v", name, fi.Mode(), err)
				}
				if b, err := os.ReadFile(target); err != nil || string(b) != want {
					t.Errorf("through %s: the target holds %q, %v", name, b, err)
				}
				if fi, _ := os.Stat(target); fi.Mode().Perm() != 0o644 {
					t.Errorf("through %s: mode %v", name, fi.Mode().Perm())
				}
			}
			if _, err := os.Lstat(filepath.Join(other, "t.csv")); err == nil {
				t.Error("a file was written in other/")
			}
			// A dangling link: the file it names is created.
			dangling := filepath.Join(other, "new")
			must(os.Symlink("../real/sub/new.csv", dangling))
			must(w.write(dangling, "new"))
			if b, err := os.ReadFile(filepath.Join(real, "sub", "new.csv")); err != nil || string(b) != "new" {
				t.Errorf("dangling link: %q, %v", b, err)
			}
			if fi, err := os.Lstat(dangling); err != nil || fi.Mode()&os.ModeSymlink == 0 {
				t.Errorf("the dangling link was replaced: %v", err)
			}
			noTemps(t, dir, real, other, filepath.Join(real, "sub"))

			// A loop and a directory are errors, and change nothing.
			must(os.Symlink("loop", filepath.Join(other, "loop")))
			if err := w.write(filepath.Join(other, "loop"), "x"); err == nil {
				t.Error("a link loop was written")
			}
			if err := w.write(real, "x"); err == nil || !strings.Contains(err.Error(), "is a directory") {
				t.Errorf("a directory: %v", err)
			}
			if fi, err := os.Lstat(filepath.Join(other, "loop")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
				t.Errorf("the loop was replaced: %v", err)
			}
		})
	}
}

// TestMoveFileThroughLinks: a file moved onto a link to a regular file
// (in the file's own directory or another one, absolute or relative, a
// chain of two links, a link through a linked directory) or onto a
// dangling link replaces the file the link names, readable by all; the
// link stays, and a reader that opened the old file keeps its content.
// A path whose directory is a link to a directory is written into that
// directory. A file replaced in the moved file's own directory is renamed
// onto, not copied.
func TestMoveFileThroughLinks(t *testing.T) {
	root := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	// out/ holds the temporary files and the paths moved onto; store/
	// holds what they name.
	out, store := filepath.Join(root, "out"), filepath.Join(root, "store")
	must(os.Mkdir(out, 0o755))
	must(os.Mkdir(store, 0o755))
	must(os.Symlink("store", filepath.Join(root, "storelink")))
	must(os.Symlink("out", filepath.Join(root, "outlink")))
	for _, c := range []struct {
		name   string
		path   string // moved onto, in out/ unless it says otherwise
		target string // the file that gets the content
		setup  func(path, target string)
		old    bool // target exists before
		rename bool // the target is in out/: the moved file itself is renamed
	}{
		{"link in the same directory", "a", filepath.Join(out, "a.v1"), func(p, _ string) { must(os.Symlink("a.v1", p)) }, true, true},
		{"absolute link", "b", filepath.Join(store, "b"), func(p, tg string) { must(os.Symlink(tg, p)) }, true, false},
		{"relative link", "c", filepath.Join(store, "c"), func(p, _ string) { must(os.Symlink("../store/c", p)) }, true, false},
		{"chain of two links", "d", filepath.Join(store, "d"), func(p, _ string) {
			must(os.Symlink("d.hop", p))
			must(os.Symlink("../store/d", filepath.Join(out, "d.hop")))
		}, true, false},
		{"link through a linked directory", "e", filepath.Join(store, "e"), func(p, _ string) { must(os.Symlink("../storelink/e", p)) }, true, false},
		{"dangling link", "f", filepath.Join(store, "f"), func(p, _ string) { must(os.Symlink("../store/f", p)) }, false, false},
		{"directory that is a link", filepath.Join(root, "storelink", "g"), filepath.Join(store, "g"), func(string, string) {}, true, false},
		{"directory that is a link to out", filepath.Join(root, "outlink", "h"), filepath.Join(out, "h"), func(string, string) {}, true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := c.path
			if !filepath.IsAbs(p) {
				p = filepath.Join(out, p)
			}
			var oldFile *os.File
			if c.old {
				must(os.WriteFile(c.target, []byte("old content"), 0o600))
				f, err := os.Open(c.target)
				must(err)
				defer f.Close()
				oldFile = f
			}
			c.setup(p, c.target)
			isLink := false
			if fi, err := os.Lstat(p); err == nil {
				isLink = fi.Mode()&os.ModeSymlink != 0
			}
			src := filepath.Join(out, ".src.tmp-"+filepath.Base(c.target))
			must(os.WriteFile(src, []byte("new content"), 0o600))
			srcInfo, err := os.Stat(src)
			must(err)

			must(MoveFile(src, p))

			if fi, err := os.Lstat(p); isLink && (err != nil || fi.Mode()&os.ModeSymlink == 0) {
				t.Errorf("the link was replaced (%v)", err)
			}
			if b, err := os.ReadFile(c.target); err != nil || string(b) != "new content" {
				t.Errorf("the target holds %q, %v", b, err)
			}
			fi, err := os.Lstat(c.target)
			if err != nil {
				t.Fatal(err)
			}
			if !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o644 {
				t.Errorf("the target: %v, want a regular file, 0644", fi.Mode())
			}
			if renamed := os.SameFile(fi, srcInfo); renamed != c.rename {
				t.Errorf("the moved file renamed onto the target: %v, want %v", renamed, c.rename)
			}
			if oldFile != nil {
				b, err := io.ReadAll(oldFile)
				if err != nil || string(b) != "old content" {
					t.Errorf("the old file, opened before, reads %q, %v", b, err)
				}
			}
			if _, err := os.Lstat(src); err == nil {
				t.Error("the moved file is still there")
			}
			noTemps(t, out, store)
		})
	}
}
