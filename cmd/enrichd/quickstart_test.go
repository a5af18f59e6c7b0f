package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lutkit/lutkit/internal/testfiles"
)

// readmeBlock returns the first ```sh block under the heading of
// README.md.
func readmeBlock(t *testing.T, root, heading string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("README.md has no %q heading", heading)
	}
	_, rest, ok = strings.Cut(rest, "```sh\n")
	if !ok {
		t.Fatalf("no sh block under %q", heading)
	}
	block, _, ok := strings.Cut(rest, "```")
	if !ok {
		t.Fatalf("the sh block under %q does not end", heading)
	}
	return block
}

// TestReadmeQuickStart runs the commands of README.md's enrichd block as
// they are written, in a directory holding the repository's examples/,
// and checks that they print enriched events. Its first line, make build,
// is done by building bin/lut and bin/enrichd with go build (what the
// Makefile's build target does) so as not to write into the checkout.
func TestReadmeQuickStart(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		testfiles.Missing(t, "bash")
	}
	root, err := testfiles.Root()
	if err != nil {
		t.Fatal(err)
	}
	block := readmeBlock(t, root, "## enrichd")
	script, ok := strings.CutPrefix(block, "make build\n")
	if !ok {
		t.Fatalf("the block does not start with make build:\n%s", block)
	}
	dir := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "bin")+"/", "./cmd/lut", "./cmd/enrichd")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	if err := os.CopyFS(filepath.Join(dir, "examples"), os.DirFS(filepath.Join(root, "examples"))); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", "-e", "-o", "pipefail", "-c", script)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v\nscript:\n%s\nstdout:\n%s\nstderr:\n%s", err, script, stdout.String(), stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "examples/quickstart.yaml: ok (1 inputs, 2 rules, 1 outputs; rules checked against the tables in dist)") {
		t.Fatalf("stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	}
	for _, l := range lines[1:] {
		var ev struct {
			Customer struct{ ID, Email string }
			Source   struct {
				Geo struct {
					CityName string `json:"city_name"`
					Site     string
				}
			}
			Tags []string
		}
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			t.Fatalf("%v: %s", err, l)
		}
		if ev.Customer.ID == "" || ev.Customer.Email == "" || ev.Source.Geo.CityName == "" || ev.Source.Geo.Site == "" || len(ev.Tags) > 0 {
			t.Errorf("not enriched: %s", l)
		}
	}
}
