//go:build linux

package tablebuild

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/lutkit/lutkit/tables"
)

// TestBuildSourceRewrittenMeanwhile: a source rewritten in place with the
// same content while its table compiles (truncated, written again line
// by line, its modification time put back, as cp -p does) fails the
// table, naming the file, and leaves the previous manifest; it never
// gives a table short of rows that the next build, finding the digest
// unchanged, would keep.
func TestBuildSourceRewrittenMeanwhile(t *testing.T) {
	dir := t.TempDir()
	var src bytes.Buffer
	src.WriteString("k,v\n")
	const rows = 400000
	for i := range rows {
		fmt.Fprintf(&src, "key%d,value%d\n", i, i*7)
	}
	path := filepath.Join(dir, "big.csv")
	if err := os.WriteFile(path, src.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := ParseConfig(filepath.Join(dir, "tables.yaml"), []byte("tables:\n  - name: big\n    sources: [big.csv]\n    key: k\n"))
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "dist")
	for attempt := range 3 {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			// Rewrite it once the build is under way, in line-aligned
			// pieces, as a slow writer does.
			time.Sleep(time.Duration(50+100*attempt) * time.Millisecond)
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
			if err != nil {
				done <- err
				return
			}
			b := src.Bytes()
			for len(b) > 0 {
				n := min(len(b), 200000)
				if i := bytes.LastIndexByte(b[:n], '\n'); i >= 0 && n < len(b) {
					n = i + 1
				}
				if _, err := f.Write(b[:n]); err != nil {
					f.Close()
					done <- err
					return
				}
				b = b[n:]
				time.Sleep(5 * time.Millisecond)
			}
			if err := f.Close(); err != nil {
				done <- err
				return
			}
			done <- os.Chtimes(path, fi.ModTime(), fi.ModTime())
		}()
		res, berr := Build(context.Background(), cfg, out, Options{Jobs: 1})
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if berr != nil {
			if res == nil || len(res.Failed()) != 1 || !errors.Is(res.Tables[0].Err, errSourceChanged) {
				t.Fatalf("attempt %d: the build failed for another reason than the rewrite: %v", attempt, berr)
			}
			if msg := berr.Error(); !bytes.Contains([]byte(msg), []byte("table big: source "+path+": the file changed while the table was built from it")) {
				t.Errorf("error: %s", msg)
			}
			if _, err := os.Stat(filepath.Join(out, tables.ManifestName)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a manifest was written: %v", err)
			}
			t.Logf("attempt %d: %v", attempt, berr)
			continue
		}
		// The rewrite ended before the build read the file: every row.
		if e := res.Manifest.Table("big"); e.Rows != rows {
			t.Fatalf("attempt %d: the build succeeded with %d rows of %d", attempt, e.Rows, rows)
		}
		os.RemoveAll(out)
	}
	// Once the file is left alone, the table builds whole.
	res, err := Build(context.Background(), cfg, out, Options{Jobs: 1})
	if err != nil {
		t.Fatal(err)
	}
	if e := res.Manifest.Table("big"); e.Rows != rows {
		t.Fatalf("%d rows of %d", e.Rows, rows)
	}
}
