package columnar

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/lutkit/lutkit/compile/source"
)

// benchRead writes data to path and runs a sub-benchmark, named by the
// file, that reads its rows (rows of them) through source.Open, reporting
// ns per row.
func benchRead(b *testing.B, path string, data []byte, rows int) {
	if err := os.WriteFile(path, data, 0o644); err != nil {
		b.Fatal(err)
	}
	b.Run(filepath.Base(path), func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			r, err := source.Open(path, source.Options{})
			if err != nil {
				b.Fatal(err)
			}
			n := 0
			for {
				if _, err := r.Next(); errors.Is(err, io.EOF) {
					break
				} else if err != nil {
					b.Fatal(err)
				}
				n++
			}
			r.Close()
			if n != rows {
				b.Fatalf("%d rows, want %d", n, rows)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*rows), "ns/row")
	})
}
