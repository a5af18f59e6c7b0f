//go:build unix

package fsutil

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// within runs f and fails the test if it has not returned after 10 s (it
// is left running: the test binary ends soon after).
func within(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: still blocked after 10 s", what)
	}
}

// TestOpenRegularRefusesAtOnce: a named pipe with no writer, a directory
// and a device are refused with a NotRegularError naming the path and the
// kind of file, without blocking; a regular file (and a link to one) opens.
func TestOpenRegularRefusesAtOnce(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "t.lut")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct{ path, kind string }{
		{fifo, "a named pipe"},
		{dir, "a directory"},
	}
	// A device node of our own (the null device's numbers), never a
	// system one.
	dev := filepath.Join(dir, "null")
	if err := syscall.Mknod(dev, syscall.S_IFCHR|0o666, 1<<8|3); err == nil {
		cases = append(cases, struct{ path, kind string }{dev, "a device"})
	} else {
		t.Logf("no device case: mknod: %v", err)
	}
	link := filepath.Join(dir, "link.lut")
	if err := os.Symlink(fifo, link); err != nil {
		t.Fatal(err)
	}
	cases = append(cases, struct{ path, kind string }{link, "a named pipe"})
	for _, c := range cases {
		within(t, "OpenRegular "+c.path, func() {
			f, _, err := OpenRegular(c.path)
			if err == nil {
				f.Close()
				t.Errorf("%s: opened", c.path)
				return
			}
			var nr *NotRegularError
			if !errors.As(err, &nr) || !errors.Is(err, ErrNotRegular) || err.Error() != c.path+": not a regular file ("+c.kind+")" {
				t.Errorf("%s: err = %v", c.path, err)
			}
			if got := UnwrapPath(err).Error(); got != "not a regular file ("+c.kind+")" {
				t.Errorf("%s: UnwrapPath: %q", c.path, got)
			}
		})
		within(t, "ReadRegular "+c.path, func() {
			if _, err := ReadRegular(c.path); !errors.Is(err, ErrNotRegular) {
				t.Errorf("ReadRegular %s: %v", c.path, err)
			}
		})
		within(t, "FileSHA256 "+c.path, func() {
			if _, _, err := FileSHA256(c.path); !errors.Is(err, ErrNotRegular) {
				t.Errorf("FileSHA256 %s: %v", c.path, err)
			}
		})
	}

	reg := filepath.Join(dir, "r.json")
	if err := os.WriteFile(reg, []byte(strings.Repeat("x", 10000)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(reg, filepath.Join(dir, "r-link")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{reg, filepath.Join(dir, "r-link")} {
		b, err := ReadRegular(p)
		if err != nil || len(b) != 10000 {
			t.Errorf("ReadRegular %s: %d bytes, %v", p, len(b), err)
		}
		f, fi, err := OpenRegular(p)
		if err != nil {
			t.Fatalf("OpenRegular %s: %v", p, err)
		}
		// A blocking descriptor: a read returns the data, never EAGAIN.
		buf := make([]byte, 20000)
		if n, err := f.Read(buf); n != 10000 || err != nil || fi.Size() != 10000 {
			t.Errorf("read %s: %d, %v (size %d)", p, n, err, fi.Size())
		}
		f.Close()
	}
	if _, _, err := OpenRegular(filepath.Join(dir, "nope")); !errors.Is(err, os.ErrNotExist) || !strings.HasPrefix(err.Error(), "open "+dir) {
		t.Errorf("a missing file: %v", err)
	}
}
