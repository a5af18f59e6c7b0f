package columnar

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet"

	"github.com/lutkit/lutkit/compile/source"
)

// fuzzParquetRows is the most rows FuzzParquet reads of a file: a run of
// RLE holds any number of rows in a few bytes.
const fuzzParquetRows = 100_000

// FuzzParquet reads any bytes as a Parquet file, up to fuzzParquetRows
// rows: the reader neither panics nor runs out of memory, and an error
// names the file. The seeds are files of each encoding (a dictionary,
// the delta encodings, PLAIN), of 200 rows, a delta page whose
// miniblock is refused, and a struct column in two row groups.
func FuzzParquet(f *testing.F) {
	noDict := parquet.WithDictionaryDefault(false)
	keys := func(b array.Builder, start, count int) {
		for i := range count {
			b.(*array.StringBuilder).Append(fmt.Sprintf("key%05d", (start+i)*7))
		}
	}
	f.Add(smallParquet(f))
	f.Add(writeParquetColumn(f, arrow.PrimitiveTypes.Int64, 200, deltaInts, noDict))
	f.Add(writeParquetColumn(f, arrow.PrimitiveTypes.Int64, 200, deltaInts, noDict, parquet.WithEncoding(parquet.Encodings.DeltaBinaryPacked)))
	f.Add(writeParquetColumn(f, arrow.BinaryTypes.String, 200, keys, noDict, parquet.WithEncoding(parquet.Encodings.DeltaLengthByteArray)))
	f.Add(writeParquetColumn(f, arrow.BinaryTypes.String, 200, keys, noDict, parquet.WithEncoding(parquet.Encodings.DeltaByteArray)))
	f.Add(writeParquetColumn(f, arrow.BinaryTypes.String, 200, keys, parquet.WithDataPageVersion(parquet.DataPageV2)))
	miniblock := writeParquetColumn(f, arrow.PrimitiveTypes.Int64, 200, deltaInts, noDict, parquet.WithEncoding(parquet.Encodings.DeltaBinaryPacked))
	replaceOnce(f, miniblock, 4, deltaStreamHeader(128, 4, 200), deltaStream(1<<26, 200, 1))
	f.Add(miniblock)
	f.Add(structParquet(f, 200, 120))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "f.parquet")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := source.Open(path, source.Options{})
		if err == nil {
			for r.Line() < fuzzParquetRows {
				if _, err = r.Next(); err != nil && !source.Skippable(err) {
					break
				}
				err = nil
			}
			r.Close()
		}
		if err != nil && !errors.Is(err, io.EOF) && !strings.HasPrefix(err.Error(), path+": ") {
			t.Errorf("err = %v", err)
		}
	})
}
