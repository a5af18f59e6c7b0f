package enrichd

import (
	"bytes"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// diskBytes returns the bytes of disk allocated to path.
func diskBytes(t *testing.T, path string) int64 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Blocks * 512
}

// TestFilePrealloc: the file output reserves disk past the end of its file
// as it writes, without changing the file's size or content, and gives the
// reservation back when the file is reopened (rotation) and closed. A file
// truncated under it (copytruncate) is reserved for from its new end.
func TestFilePrealloc(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.json")
	s, err := newFileSink(path, 64<<10, &OutputStats{})
	if err != nil {
		t.Fatal(err)
	}
	line := bytes.Repeat([]byte("x"), 99)
	line = append(line, '\n')
	batch := bytes.Repeat(line, 1000) // 100 kB: written around the buffer
	var want bytes.Buffer
	write := func(p []byte) {
		t.Helper()
		if err := s.Write(p, 0); err != nil {
			t.Fatal(err)
		}
		want.Write(p)
	}
	for range 10 {
		write(batch)
		write(line) // through the buffer
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if s.noAlloc {
		t.Skip("the file system cannot preallocate")
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() != int64(want.Len()) {
		t.Fatalf("size %d, want %d", fi.Size(), want.Len())
	}
	if d := diskBytes(t, path); d < fi.Size()+preallocStep/2 {
		t.Fatalf("%d bytes of disk for %d bytes of file: nothing reserved", d, fi.Size())
	}

	// Rotation: the renamed file keeps its content and gives back its
	// reservation.
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	if err := s.Reopen(); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path + ".1")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want.Bytes()) {
		t.Fatal("the rotated file's content differs from what was written")
	}
	if d := diskBytes(t, path+".1"); d > int64(len(got))+64<<10 {
		t.Fatalf("rotated file: %d bytes of disk for %d bytes: reservation kept", d, len(got))
	}

	// copytruncate: the file is emptied under the output.
	want.Reset()
	write(batch)
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	want.Reset()
	s.ahead = 0 // as after writing a whole reservation
	write(batch)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	got, err = os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("after truncation: %d bytes, want %d", len(got), want.Len())
	}
	if d := diskBytes(t, path); d > int64(len(got))+64<<10 {
		t.Fatalf("closed file: %d bytes of disk for %d bytes: reservation kept", d, len(got))
	}
}

// TestFilePreallocDevice: a file output to a device reserves nothing and
// closes without error.
func TestFilePreallocDevice(t *testing.T) {
	s, err := newFileSink(os.DevNull, 4096, &OutputStats{})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := s.Write(bytes.Repeat([]byte("x\n"), 64<<10), 0); err != nil {
			t.Fatal(err)
		}
	}
	if !s.noAlloc || s.reserved {
		t.Fatalf("noAlloc %v reserved %v: want a device to be left alone", s.noAlloc, s.reserved)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}
