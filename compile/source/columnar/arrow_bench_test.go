package columnar

import (
	"bytes"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// BenchmarkArrowRead reads 1,000,000 rows (a string key, an integer and a
// string, in batches of 65,536) of an Arrow IPC file and of a stream, as
// lut compile does: the cost of reading, checks of the file included.
func BenchmarkArrowRead(b *testing.B) {
	const rows, batch = 1_000_000, 65_536
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "key", Type: arrow.BinaryTypes.String},
		{Name: "n", Type: arrow.PrimitiveTypes.Int64},
		{Name: "email", Type: arrow.BinaryTypes.String},
	}, nil)
	dir := b.TempDir()
	for _, stream := range []bool{false, true} {
		var buf bytes.Buffer
		var w interface {
			Write(arrow.RecordBatch) error
			Close() error
		}
		if stream {
			w = ipc.NewWriter(&buf, ipc.WithSchema(schema))
		} else {
			fw, err := ipc.NewFileWriter(&buf, ipc.WithSchema(schema))
			if err != nil {
				b.Fatal(err)
			}
			w = fw
		}
		bld := array.NewRecordBuilder(memory.DefaultAllocator, schema)
		for start := 0; start < rows; start += batch {
			for i := start; i < min(start+batch, rows); i++ {
				bld.Field(0).(*array.StringBuilder).Append(fmt.Sprintf("C%07d", i))
				bld.Field(1).(*array.Int64Builder).Append(int64(i) * 7)
				bld.Field(2).(*array.StringBuilder).Append(fmt.Sprintf("user%d@example.com", i))
			}
			rec := bld.NewRecordBatch()
			if err := w.Write(rec); err != nil {
				b.Fatal(err)
			}
			rec.Release()
		}
		bld.Release()
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
		name := "file.arrow"
		if stream {
			name = "stream.ipc"
		}
		benchRead(b, filepath.Join(dir, name), buf.Bytes(), rows)
	}
}
