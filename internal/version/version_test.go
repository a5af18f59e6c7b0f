package version

import (
	"strings"
	"testing"
)

func TestString(t *testing.T) {
	old, oldCommit := Version, Commit
	defer func() { Version, Commit = old, oldCommit }()
	Version, Commit = "v1.2.3-4-gabcdef0", "abcdef0"
	s := String("lut")
	if !strings.HasPrefix(s, "lut v1.2.3-4-gabcdef0 (commit abcdef0, go") {
		t.Fatalf("%q", s)
	}
}
