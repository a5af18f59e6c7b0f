//go:build unix

package fsutil_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/lutkit/lutkit/internal/fsutil"
)

// TestLock: a second Lock of a held file is refused with ErrLocked, by
// this process and by another one (flock(1), util-linux); once unlocked,
// the file can be locked again.
func TestLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	unlock, err := fsutil.Lock(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fsutil.Lock(path); !errors.Is(err, fsutil.ErrLocked) {
		t.Fatalf("a second Lock while held: %v, want ErrLocked", err)
	}
	// flock(1) of util-linux, in every Debian system: exit 1 when it
	// cannot take the lock with -n.
	out, err := exec.Command("flock", "-n", path, "true").CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("flock -n on the held lock: %v (%s), want exit status 1", err, out)
	}
	unlock()
	again, err := fsutil.Lock(path)
	if err != nil {
		t.Fatalf("Lock after unlock: %v", err)
	}
	again()
	if _, err := fsutil.Lock(filepath.Join(t.TempDir(), "missing", "lock")); err == nil || errors.Is(err, fsutil.ErrLocked) {
		t.Fatalf("Lock in a missing directory: %v, want a path error", err)
	} else if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Lock in a missing directory: %v, want it not to exist", err)
	}
}
