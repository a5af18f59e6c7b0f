package fsutil

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TestWriteFileNamesTheOutput: an output whose temporary file cannot be
// created (its directory does not exist) is named as given.
func TestWriteFileNamesTheOutput(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing", "o.lut")
	err := WriteFile(path, func(*os.File) error { return nil })
	if want := "create " + path + ": no such file or directory"; err == nil || err.Error() != want || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("got %v, want %q", err, want)
	}
}
