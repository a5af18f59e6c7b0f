package licenses_test

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"

	"github.com/lutkit/lutkit/internal/licenses"
	"github.com/lutkit/lutkit/internal/testfiles"
)

// TestCurrent regenerates the file from go.mod and the module cache and
// compares it with the committed one: a dependency added, removed or
// upgraded without "go generate ./internal/licenses" fails here.
func TestCurrent(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		testfiles.Missing(t, "the go command (the generator runs go list)")
	}
	out, err := exec.Command("go", "run", "./gen", "-out", "-").Output()
	if err != nil {
		t.Fatalf("go run ./gen: %v", err)
	}
	if !bytes.Equal(out, []byte(licenses.Text)) {
		t.Fatal("third_party.txt is not current: run go generate ./internal/licenses")
	}
}

func TestModules(t *testing.T) {
	mods := licenses.Modules()
	byPath := map[string]licenses.Module{}
	for _, m := range mods {
		byPath[m.Path] = m
		if !strings.Contains(licenses.Texts(), "==== "+m.Path+" "+m.Version+": ") {
			t.Errorf("%s %s: no licence text", m.Path, m.Version)
		}
	}
	// A few the programs surely link, with the licences their
	// repositories state.
	for path, lic := range map[string]string{
		"github.com/spf13/cobra":                  "Apache-2.0",
		"github.com/spf13/pflag":                  "BSD-3-Clause",
		"github.com/oschwald/maxminddb-golang/v2": "ISC",
		"golang.org/x/sys":                        "BSD-3-Clause",
		"github.com/twmb/franz-go":                "BSD-3-Clause",
	} {
		if byPath[path].License != lic {
			t.Errorf("%s: %q, want %s", path, byPath[path].License, lic)
		}
	}
}
