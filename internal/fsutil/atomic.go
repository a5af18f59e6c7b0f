package fsutil

import (
	"fmt"
	"os"
	"path/filepath"
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
func WriteFile(path string, write func(f *os.File) error) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
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
		return fmt.Errorf("syncing %s: %w", tmp, err)
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
