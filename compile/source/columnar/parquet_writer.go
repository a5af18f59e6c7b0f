package columnar

import (
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/lutkit/lutkit/compile/source"
)

// parquetRowGroupRows is the number of rows the Parquet writer buffers and
// writes as one row group.
const parquetRowGroupRows = 64 << 10

// parquetWriter buffers up to parquetRowGroupRows rows in Arrow string
// builders and writes them as one row group.
type parquetWriter struct {
	fw       *pqarrow.FileWriter
	schema   *arrow.Schema
	builders []*array.StringBuilder
	rows     int
	closed   bool
}

// nopCloser hides the Close method of the destination, which the Parquet
// file writer would otherwise call.
type nopCloser struct{ io.Writer }

func newParquetWriter(w io.Writer, columns []string) (source.Writer, error) {
	if err := source.CheckColumnNames(columns); err != nil {
		return nil, fmt.Errorf("source: %w", err)
	}
	fields := make([]arrow.Field, len(columns))
	for i, c := range columns {
		fields[i] = arrow.Field{Name: c, Type: arrow.BinaryTypes.String, Nullable: false}
	}
	schema := arrow.NewSchema(fields, nil)
	props := parquet.NewWriterProperties(
		parquet.WithCompression(compress.Codecs.Snappy),
		parquet.WithMaxRowGroupLength(parquetRowGroupRows),
		parquet.WithDictionaryDefault(true),
	)
	fw, err := pqarrow.NewFileWriter(schema, nopCloser{w}, props, pqarrow.DefaultWriterProps())
	if err != nil {
		return nil, fmt.Errorf("source: parquet: %w", err)
	}
	pw := &parquetWriter{fw: fw, schema: schema, builders: make([]*array.StringBuilder, len(columns))}
	for i := range pw.builders {
		pw.builders[i] = array.NewStringBuilder(memory.DefaultAllocator)
	}
	return pw, nil
}

func (w *parquetWriter) Write(fields [][]byte) error {
	if w.closed {
		return errors.New("source: parquet writer closed")
	}
	if err := source.CheckFieldCount(len(fields), len(w.builders)); err != nil {
		return err
	}
	for i, f := range fields {
		w.builders[i].BinaryBuilder.Append(f) // no string conversion
	}
	w.rows++
	if w.rows == parquetRowGroupRows {
		return w.flush()
	}
	return nil
}

// flush writes the buffered rows as one row group.
func (w *parquetWriter) flush() error {
	if w.rows == 0 {
		return nil
	}
	cols := make([]arrow.Array, len(w.builders))
	for i, b := range w.builders {
		cols[i] = b.NewArray()
	}
	rec := array.NewRecordBatch(w.schema, cols, int64(w.rows))
	for _, c := range cols {
		c.Release()
	}
	w.rows = 0
	err := w.fw.Write(rec)
	rec.Release()
	if err != nil {
		return fmt.Errorf("source: parquet: %w", err)
	}
	return nil
}

func (w *parquetWriter) Close() error {
	if w.closed {
		return nil
	}
	w.closed = true
	err := w.flush()
	for _, b := range w.builders {
		b.Release()
	}
	if cerr := w.fw.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("source: parquet: %w", cerr)
	}
	return err
}
