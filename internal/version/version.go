// Package version holds the version and commit the binaries were built
// from. The Makefile sets them with the linker:
//
//	go build -ldflags "-X github.com/lutkit/lutkit/internal/version.Version=$(git describe --tags --always --dirty) \
//	    -X github.com/lutkit/lutkit/internal/version.Commit=$(git rev-parse --short HEAD)"
//
// A plain "go build" leaves them at "dev" and "unknown".
package version

import (
	"fmt"
	"runtime"
)

// Set at link time (see the package comment).
var (
	Version = "dev"
	Commit  = "unknown"
)

// String is what "--version" prints for program: its name, version,
// commit, and the Go release and platform it was built with.
func String(program string) string {
	return fmt.Sprintf("%s %s (commit %s, %s %s/%s)", program, Version, Commit, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// Writer is how files written by this build name their writer: "lutkit",
// the version and the commit, as String prints them.
func Writer() string {
	return fmt.Sprintf("lutkit %s (commit %s)", Version, Commit)
}
