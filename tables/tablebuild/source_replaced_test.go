package tablebuild

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestBuildSourceReplacedMeanwhile: a source replaced by a rename while
// its table compiles (the way to write a source that a build may read)
// is no reason to fail: the compile read one whole file, the old or the
// new one.
func TestBuildSourceReplacedMeanwhile(t *testing.T) {
	dir := t.TempDir()
	const rows = 400000
	write := func(name string, n int) {
		var b bytes.Buffer
		b.WriteString("k,v\n")
		for i := range n {
			fmt.Fprintf(&b, "key%d,value%d\n", i, i*7)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("big.csv", rows)
	write("next.csv", rows+1)
	cfg, err := ParseConfig(filepath.Join(dir, "tables.yaml"), []byte("tables:\n  - name: big\n    sources: [big.csv]\n    key: k\n"))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		time.Sleep(100 * time.Millisecond)
		done <- os.Rename(filepath.Join(dir, "next.csv"), filepath.Join(dir, "big.csv"))
	}()
	res, err := Build(context.Background(), cfg, filepath.Join(dir, "dist"), Options{Jobs: 1})
	if rerr := <-done; rerr != nil {
		t.Fatal(rerr)
	}
	if err != nil {
		t.Fatalf("build: %v", err)
	}
	if n := res.Manifest.Table("big").Rows; n != rows && n != rows+1 {
		t.Fatalf("%d rows", n)
	}
}
