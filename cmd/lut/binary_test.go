package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

var (
	binOnce sync.Once
	binPath string
	binErr  error
	binDir  string
)

// lutBinary builds the lut command once per test run (with a version and
// commit set as the Makefile sets them) and returns its path.
func lutBinary(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the lut command")
	}
	binOnce.Do(func() {
		binDir, binErr = os.MkdirTemp("", "lut-bin-")
		if binErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "lut")
		// No -trimpath (unlike the Makefile): the other tests' builds are
		// without it, and one more compile of every package is avoided.
		out, err := exec.Command("go", "build", "-ldflags",
			"-X github.com/lutkit/lutkit/internal/version.Version=v9.8.7-test -X github.com/lutkit/lutkit/internal/version.Commit=abc1234",
			"-o", binPath, ".").CombinedOutput()
		if err != nil {
			binErr = &buildError{err: err, out: string(out)}
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string { return "go build: " + e.err.Error() + "\n" + e.out }

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}
