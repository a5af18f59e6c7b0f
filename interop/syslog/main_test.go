package syslog

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/lutkit/lutkit/internal/testfiles"
)

// enrichdBin is the enrichd binary TestMain builds into workDir.
var enrichdBin, workDir string

func TestMain(m *testing.M) {
	var err error
	if workDir, err = os.MkdirTemp("", "interop-syslog-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	enrichdBin = filepath.Join(workDir, "enrichd")
	build := exec.Command("go", "build", "-o", enrichdBin, "github.com/lutkit/lutkit/cmd/enrichd")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building enrichd:", err)
		os.RemoveAll(workDir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(workDir)
	os.Exit(code)
}

// program returns the path of a program on PATH, or ends the test through
// testfiles.Missing (a failure under CI=true) naming the Debian package.
func program(t testing.TB, name, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		testfiles.Missing(t, fmt.Sprintf("%s (Debian package %s)", name, pkg))
	}
	return p
}
