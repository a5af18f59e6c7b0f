package columnar

import (
	"bytes"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// BenchmarkParquetRead reads 1,000,000 rows (a string key, an integer and
// a string, in row groups of 65,536) of a Parquet file, Snappy
// compressed, as lut compile does: the cost of reading, checks of the
// file included. dict.parquet has the writer's default encodings (a
// dictionary, and PLAIN past its size); delta.parquet has the delta
// encodings, whose pages the checks decompress and read too.
func BenchmarkParquetRead(b *testing.B) {
	const rows, group = 1_000_000, 65_536
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "key", Type: arrow.BinaryTypes.String},
		{Name: "n", Type: arrow.PrimitiveTypes.Int64},
		{Name: "email", Type: arrow.BinaryTypes.String},
	}, nil)
	dir := b.TempDir()
	for _, delta := range []bool{false, true} {
		opts := []parquet.WriterProperty{parquet.WithCompression(compress.Codecs.Snappy), parquet.WithMaxRowGroupLength(group)}
		name := "dict.parquet"
		if delta {
			name = "delta.parquet"
			opts = append(opts, parquet.WithDictionaryDefault(false),
				parquet.WithEncodingFor("key", parquet.Encodings.DeltaByteArray),
				parquet.WithEncodingFor("n", parquet.Encodings.DeltaBinaryPacked),
				parquet.WithEncodingFor("email", parquet.Encodings.DeltaLengthByteArray))
		}
		var buf bytes.Buffer
		fw, err := pqarrow.NewFileWriter(schema, &buf, parquet.NewWriterProperties(opts...), pqarrow.DefaultWriterProps())
		if err != nil {
			b.Fatal(err)
		}
		bld := array.NewRecordBuilder(memory.DefaultAllocator, schema)
		for start := 0; start < rows; start += group {
			for i := start; i < min(start+group, rows); i++ {
				bld.Field(0).(*array.StringBuilder).Append(fmt.Sprintf("C%07d", i))
				bld.Field(1).(*array.Int64Builder).Append(int64(i) * 7)
				bld.Field(2).(*array.StringBuilder).Append(fmt.Sprintf("user%d@example.com", i))
			}
			rec := bld.NewRecordBatch()
			if err := fw.Write(rec); err != nil {
				b.Fatal(err)
			}
			rec.Release()
		}
		bld.Release()
		if err := fw.Close(); err != nil {
			b.Fatal(err)
		}
		benchRead(b, filepath.Join(dir, name), buf.Bytes(), rows)
	}
}
