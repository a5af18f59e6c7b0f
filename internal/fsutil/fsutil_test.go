package fsutil

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "out.txt")
	if err := WriteFile(p, func(f *os.File) error {
		_, err := f.WriteString("hello")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil || string(b) != "hello" {
		t.Fatalf("read back %q, %v", b, err)
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644", fi.Mode().Perm())
	}
	// A failed write leaves the old file and no temporary file.
	boom := errors.New("boom")
	if err := WriteFile(p, func(f *os.File) error {
		if _, err := f.WriteString("partial"); err != nil {
			return err
		}
		return boom
	}); !errors.Is(err, boom) {
		t.Fatalf("err = %v, want the write's error", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "hello" {
		t.Errorf("a failed write replaced the file: %q", b)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("left behind: %v", ents)
	}
}

// TestWriteFileSyncError: the directory sync's error is returned, with
// the new file in place.
func TestWriteFileSyncError(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "out.txt")
	failed := errors.New("sync failed")
	syncDir = func(d string) error {
		if d != dir {
			t.Errorf("synced %s, want %s", d, dir)
		}
		return failed
	}
	defer func() { syncDir = SyncDir }()
	err := WriteFile(p, func(f *os.File) error { _, err := f.WriteString("x"); return err })
	if !errors.Is(err, failed) {
		t.Fatalf("err = %v, want the directory sync's error", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "x" {
		t.Errorf("file not in place: %q", b)
	}
}

func TestSyncDirNamesTheDirectory(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope")
	err := SyncDir(missing)
	if err == nil || !strings.Contains(err.Error(), "syncing "+missing+": open: ") {
		t.Fatalf("err = %v", err)
	}
}

func TestFileSHA256(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte("abc"), 0o644); err != nil {
		t.Fatal(err)
	}
	sum, n, err := FileSHA256(p)
	const want = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
	if err != nil || n != 3 || sum != want || BytesSHA256([]byte("abc")) != want {
		t.Fatalf("%s %d %v", sum, n, err)
	}
}

func TestUnwrapPath(t *testing.T) {
	_, err := os.Open("/no/such/file")
	if got := UnwrapPath(err).Error(); got != "open: no such file or directory" {
		t.Errorf("got %q", got)
	}
	other := errors.New("x")
	if got := UnwrapPath(other); !errors.Is(got, other) || got.Error() != "x" {
		t.Error("a non-path error was changed")
	}
}

// TestRemoveTempsDirectory checks that a tracked directory is removed
// with its files, and that an untracked one stays.
func TestRemoveTempsDirectory(t *testing.T) {
	base := t.TempDir()
	tracked, kept := filepath.Join(base, "tracked"), filepath.Join(base, "kept")
	for _, d := range []string{tracked, kept} {
		if err := os.MkdirAll(filepath.Join(d, "sub"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "sub", "f"), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	defer TrackTemp(tracked)()
	TrackTemp(kept)() // tracked, then untracked before RemoveTemps
	// RemoveTemps leaves the registry locked, for a program about to exit.
	n := func() int { defer temps.Unlock(); return RemoveTemps() }()
	if n != 1 {
		t.Fatalf("RemoveTemps removed %d paths, want 1", n)
	}
	if _, err := os.Stat(tracked); !os.IsNotExist(err) {
		t.Fatalf("the tracked directory is still there: %v", err)
	}
	if _, err := os.Stat(filepath.Join(kept, "sub", "f")); err != nil {
		t.Fatalf("the untracked directory lost its file: %v", err)
	}
}

// TestCheckNotInput: an output that is one of the inputs, by its name, a
// link or a hard link, is refused; other outputs, missing ones and
// inputs that cannot be looked at are not.
func TestCheckNotInput(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.csv")
	other := filepath.Join(dir, "other.csv")
	for _, p := range []string{in, other} {
		if err := os.WriteFile(p, []byte("k\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link, hard := filepath.Join(dir, "link"), filepath.Join(dir, "hard")
	if err := os.Symlink("in.csv", link); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(in, hard); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{in, link, hard} {
		err := CheckNotInput(out, other, in)
		if err == nil || !strings.Contains(err.Error(), "the output "+out) || !strings.Contains(err.Error(), "refusing to overwrite it") {
			t.Errorf("output %s: %v", out, err)
		}
	}
	if err := CheckNotInput(in, "", in); err == nil || err.Error() != "the output "+in+" is also an input: refusing to overwrite it" {
		t.Errorf("the same name: %v", err)
	}
	for _, c := range [][]string{
		{other, in},
		{filepath.Join(dir, "new.csv"), in},
		{other, filepath.Join(dir, "missing.csv")},
	} {
		if err := CheckNotInput(c[0], c[1:]...); err != nil {
			t.Errorf("%v: %v", c, err)
		}
	}
	// Standard input as "-".
	f, err := os.Open(in)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	stdin := os.Stdin
	os.Stdin = f
	defer func() { os.Stdin = stdin }()
	if err := CheckNotInput(link, "-"); err == nil || !strings.Contains(err.Error(), "is the standard input") {
		t.Errorf("standard input: %v", err)
	}
}

// TestMoveFile: the file moved is at the path, readable by all, and no
// longer at its old name; a directory at the path is an error that leaves
// both in place.
func TestMoveFile(t *testing.T) {
	dir := t.TempDir()
	src, p := filepath.Join(dir, ".out.tmp-1"), filepath.Join(dir, "out")
	if err := os.WriteFile(src, []byte("new"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := MoveFile(src, p); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(p); err != nil || string(b) != "new" {
		t.Errorf("read back %q, %v", b, err)
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644", fi.Mode().Perm())
	}
	if _, err := os.Lstat(src); err == nil {
		t.Error("the moved file is still at its old name")
	}
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(src, []byte("new"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := MoveFile(src, sub); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("onto a directory: %v", err)
	}
	if _, err := os.Stat(src); err != nil {
		t.Errorf("a failed move removed the file: %v", err)
	}
	if fi, err := os.Stat(sub); err != nil || !fi.IsDir() {
		t.Errorf("the directory: %v", err)
	}
}
