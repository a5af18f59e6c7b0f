package tablebuild

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestBuildRemovesStaleTemps: what a build killed with SIGKILL leaves in
// the output directory (the temporary file of a table, the one the
// compile writes it through, and the directory of partitions of a table
// of more than 4,194,304 rows with its files) is removed by the next
// build; a file of the user's of a like name that is not hidden stays.
func TestBuildRemovesStaleTemps(t *testing.T) {
	cfg, err := LoadConfig(copyExamples(t))
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	stale := []string{
		".customers.build-123.lut",
		"..customers.build-123.lut.tmp-456",
		".lut-spill-789/part-000",
		".lut-spill-789/part-255",
	}
	for _, p := range append(stale, "keep.build-1.lut") {
		p = filepath.Join(out, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, make([]byte, 4096), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Build(context.Background(), cfg, out, Options{}); err != nil {
		t.Fatal(err)
	}
	for _, p := range append(stale, ".lut-spill-789") {
		if _, err := os.Lstat(filepath.Join(out, p)); !os.IsNotExist(err) {
			t.Errorf("%s left after a build: %v", p, err)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "keep.build-1.lut")); err != nil {
		t.Error(err)
	}
}
