package fsutil

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// WriteFile writes the file at path atomically: it creates a temporary
// file next to path (named .BASE.tmp-*), lets write fill it, makes it
// readable by all (0644), fsyncs and closes it, renames it to path and
// fsyncs the directory.
//
// If write or any step before the rename fails, the temporary file is
// removed and nothing is left at path (a crash may leave a stale
// temporary file, which callers may remove by its name; RemoveTemps
// removes it when the program ends on a signal). If only the
// directory sync fails, the new file is in place but its rename may not
// survive a crash, and the error says so. write may read the temporary
// file back by f.Name() (to check what it wrote) and must not close f.
//
// What is at path is written to, as cp and sort -o do, not replaced:
//
//   - a symbolic link (or a chain of them) to a regular file, or to
//     nothing, stays: the temporary file is created beside the link's
//     final target and renamed onto it.
//   - a file that is not a regular file (a character device such as a
//     terminal or /dev/null, a named pipe, a socket) is opened and written
//     into; nothing is renamed, and an error writing it (ENOSPC on a full
//     device) is returned. write, which may seek and read back, fills a
//     scratch file in os.TempDir() that is then copied into it and
//     removed; WriteStream writes such a file directly.
//   - a directory is an error.
func WriteFile(path string, write func(f *os.File) error) error {
	target, special, err := outputTarget(path)
	if err != nil {
		return err
	}
	if special {
		return writeSpecial(path, func(dst *os.File) error { return viaScratch(path, dst, write) })
	}
	return writeAtomic(target, write)
}

// WriteStream is WriteFile for output written once from its start to its
// end: write gets the file as an io.Writer. A file at path that is not a
// regular file (a device, a named pipe) is written directly, with no
// temporary file; anything else is written as by WriteFile.
func WriteStream(path string, write func(w io.Writer) error) error {
	target, special, err := outputTarget(path)
	if err != nil {
		return err
	}
	fill := func(f *os.File) error { return write(f) }
	if special {
		return writeSpecial(path, fill)
	}
	return writeAtomic(target, fill)
}

// MoveFile puts the complete file at src (a temporary file its caller
// wrote, synced and closed, such as one WriteFile wrote) at path as
// WriteFile would have written it there: readable by all (0644), renamed
// onto path or, when path is a symbolic link (or a chain of them), onto
// the file the link names, which a dangling link's target becomes; the
// link stays. The directory renamed into is fsynced. A reader that opened
// the file replaced keeps reading its old content.
//
// The rename stays within one directory: src is renamed when the file it
// replaces is in src's directory, and otherwise copied into a temporary
// file beside that file (as WriteFile makes one), which is renamed onto
// it. A file at path that is not a regular file (a device, a named pipe)
// gets a copy of src; a directory is an error. src is removed once it is
// in place and left to its caller on an error.
func MoveFile(src, path string) error {
	target, special, err := outputTarget(path)
	if err != nil {
		return err
	}
	copyFrom := func(dst *os.File) error {
		s, err := os.Open(src)
		if err != nil {
			return err
		}
		defer s.Close()
		_, err = io.Copy(dst, s)
		return err
	}
	switch {
	case special:
		err = writeSpecial(path, copyFrom)
	case sameDir(src, target):
		return renameInto(src, target)
	default:
		err = writeAtomic(target, copyFrom)
	}
	if err != nil {
		return err
	}
	os.Remove(src)
	return nil
}

// renameInto makes src readable by all, renames it onto target, in the
// same directory, and fsyncs that directory.
func renameInto(src, target string) error {
	if err := os.Chmod(src, 0o644); err != nil {
		return err
	}
	if err := os.Rename(src, target); err != nil {
		return err
	}
	return syncDir(dirOf(target))
}

// sameDir reports whether the files a and b (which need not exist) are in
// one directory, however their directories are named.
func sameDir(a, b string) bool {
	da, err := os.Stat(dirOf(a))
	if err != nil {
		return false
	}
	db, err := os.Stat(dirOf(b))
	return err == nil && os.SameFile(da, db)
}

// outputTarget says where a write of path goes: the path to rename onto
// (path, or the final target of the symbolic links at path), or special
// when path names (through links) a file that is not a regular file and
// is written into in place.
func outputTarget(path string) (target string, special bool, err error) {
	fi, err := os.Stat(path)
	switch {
	case err == nil && fi.IsDir():
		return "", false, fmt.Errorf("%s: is a directory", path)
	case err == nil && !fi.Mode().IsRegular():
		return path, true, nil
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return "", false, err
	}
	target, err = linkTarget(path)
	if err != nil {
		return "", false, err
	}
	if fi != nil && target != path {
		// The links were followed as the kernel follows them; a link
		// whose text does not name the file (a /proc/self/fd link to a
		// deleted file) is not renamed onto.
		if tfi, err := os.Stat(target); err != nil || !os.SameFile(fi, tfi) {
			return "", false, fmt.Errorf("%s: cannot tell which file the symbolic link names (it resolves to %s)", path, target)
		}
	}
	return target, false, nil
}

// maxLinks is how many symbolic links linkTarget follows (as Linux's
// MAXSYMLINKS).
const maxLinks = 40

// linkTarget returns the final target of the symbolic links at path, or
// path if it is not a link. The target need not exist. The path is not
// cleaned: "dir/link/../x" is what the kernel resolves when link is a
// link to a directory, not "dir/x".
func linkTarget(path string) (string, error) {
	p := path
	for i := 0; ; i++ {
		fi, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) || err == nil && fi.Mode()&fs.ModeSymlink == 0 {
			return p, nil
		}
		if err != nil {
			return "", err
		}
		if i == maxLinks {
			return "", fmt.Errorf("%s: too many levels of symbolic links", path)
		}
		link, err := os.Readlink(p)
		if err != nil {
			return "", err
		}
		if filepath.IsAbs(link) {
			p = link
		} else {
			dir, _ := filepath.Split(p)
			p = dir + link
		}
	}
}

// dirOf is the directory of path, not cleaned (see linkTarget).
func dirOf(path string) string {
	dir, _ := filepath.Split(path)
	if dir == "" {
		return "."
	}
	trimmed := strings.TrimRight(dir, string(filepath.Separator))
	if len(trimmed) <= len(filepath.VolumeName(dir)) {
		return dir[:len(trimmed)+1] // the root
	}
	return trimmed
}

// writeAtomic writes path through a temporary file beside it, renamed
// onto it (see WriteFile).
func writeAtomic(path string, write func(f *os.File) error) error {
	dir := dirOf(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		// Named by the output asked for, not the temporary file's
		// random name: "create dir/out.lut: no such file or directory".
		var pe *os.PathError
		if errors.As(err, &pe) {
			return &os.PathError{Op: "create", Path: path, Err: pe.Err}
		}
		return err
	}
	tmp := f.Name()
	untrack := TrackTemp(tmp)
	defer untrack()
	renamed := false
	defer func() {
		if !renamed {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err := write(f); err != nil {
		return err
	}
	if err := f.Chmod(0o644); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("syncing %s: %w", path, UnwrapPath(err))
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	renamed = true
	return syncDir(dir)
}

// writeSpecial opens the existing file at path, which is not a regular
// file, and lets fill write into it. Opening a named pipe waits for a
// reader, as a shell's redirection does.
func writeSpecial(path string, fill func(f *os.File) error) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if err := fill(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// viaScratch lets write fill a scratch file in os.TempDir() (a regular
// file, which it may seek and read back), then copies it into dst.
func viaScratch(path string, dst *os.File, write func(f *os.File) error) error {
	s, err := os.CreateTemp("", "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer TrackTemp(s.Name())()
	defer os.Remove(s.Name())
	defer s.Close()
	if err := write(s); err != nil {
		return err
	}
	if _, err := s.Seek(0, io.SeekStart); err != nil {
		return err
	}
	_, err = io.Copy(dst, s)
	return err
}

// syncDir is SyncDir; tests replace it to see its error come back.
var syncDir = SyncDir

// SyncDir fsyncs a directory, making the renames and creations in it
// durable. The error names the directory.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("syncing %s: %w", dir, UnwrapPath(err))
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("syncing %s: %w", dir, err)
	}
	return nil
}
