package columnar

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// A Parquet file's rows are read in record batches of as many rows as
// take about parquetBatchBytes, judged by the batch read before: the
// first is parquetFirstBatchRows rows, and each is at most twice the rows
// of the one before and at most parquetBatchRows. A dictionary or a
// compressed page holds a long value repeated in a few bytes a row, so a
// batch of a fixed number of rows holds any number of bytes (65,536 rows
// of a 4,000-byte string are 262 MB); rows of the length of those before
// them are read parquetBatchBytes at a time. Rows much longer than those
// before them are read in a batch sized for those.
const (
	parquetBatchRows      = 64 << 10
	parquetFirstBatchRows = 1 << 10
	parquetBatchBytes     = 4 << 20
)

// parquetBatches reads the record batches of the columns of a Parquet
// file, each column with its pqarrow.ColumnReader.
type parquetBatches struct {
	schema  *arrow.Schema
	columns []*pqarrow.ColumnReader
	mem     memory.Allocator
	rows    int64 // of the next batch
	read    int64 // rows read
	total   int64 // rows in the footer
	cur     arrow.RecordBatch
}

// newParquetBatches reads the rows of every row group of fr.
func newParquetBatches(fr *pqarrow.FileReader, mem memory.Allocator) (*parquetBatches, error) {
	pf := fr.ParquetReader()
	leaves := make([]int, pf.MetaData().Schema.NumColumns())
	for i := range leaves {
		leaves[i] = i
	}
	rowGroups := make([]int, pf.NumRowGroups())
	for i := range rowGroups {
		rowGroups[i] = i
	}
	columns, schema, err := fr.GetFieldReaders(context.Background(), leaves, rowGroups)
	if err != nil {
		return nil, err
	}
	if len(columns) == 0 {
		return nil, errors.New("no columns")
	}
	return &parquetBatches{schema: schema, columns: columns, mem: mem, rows: parquetFirstBatchRows, total: pf.NumRows()}, nil
}

// next returns the next record batch, valid until the next call, or
// io.EOF after the last.
func (p *parquetBatches) next() (arrow.RecordBatch, error) {
	p.release()
	cols := make([]arrow.Array, len(p.columns))
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	for i, c := range p.columns {
		chunked, err := c.NextBatch(p.rows)
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		n := 0
		if chunked != nil {
			n = chunked.Len()
		}
		switch {
		case i == 0 && n == 0:
			if chunked != nil {
				chunked.Release()
			}
			if p.read != p.total {
				return nil, fmt.Errorf("the columns end after %d rows, the footer gives %d", p.read, p.total)
			}
			return nil, io.EOF
		case i > 0 && n != cols[0].Len():
			if chunked != nil {
				chunked.Release()
			}
			return nil, fmt.Errorf("column %q gives %d rows after row %d, column %q %d",
				p.schema.Field(i).Name, n, p.read, p.schema.Field(0).Name, cols[0].Len())
		}
		cols[i], err = singleArray(chunked, p.mem)
		chunked.Release()
		if err != nil {
			return nil, err
		}
	}
	p.cur = array.NewRecordBatch(p.schema, cols, -1)
	p.read += p.cur.NumRows()
	p.rows = nextBatchRows(p.cur.NumRows(), recordBytes(p.cur))
	return p.cur, nil
}

// nextBatchRows is the number of rows to read after a batch of rows rows
// that took bytes bytes.
func nextBatchRows(rows, bytes int64) int64 {
	n := min(2*max(rows, 1), parquetBatchRows)
	if bytes > 0 {
		n = min(n, max(parquetBatchBytes*rows/bytes, 1))
	}
	return n
}

// recordBytes is the bytes of the buffers of rec, of its columns'
// children and dictionaries too.
func recordBytes(rec arrow.RecordBatch) int64 {
	var n int64
	for _, c := range rec.Columns() {
		n += dataBytes(c.Data())
	}
	return n
}

func dataBytes(d arrow.ArrayData) int64 {
	var n int64
	for _, b := range d.Buffers() {
		if b != nil {
			n += int64(b.Len())
		}
	}
	for _, c := range d.Children() {
		n += dataBytes(c)
	}
	if dict := d.Dictionary(); dict != nil && dict.(*array.Data) != nil {
		n += dataBytes(dict)
	}
	return n
}

// singleArray is the values of chunked in one array: a column's chunks of
// a batch from two row groups, or of more than arrow-go puts in one.
func singleArray(chunked *arrow.Chunked, mem memory.Allocator) (arrow.Array, error) {
	if chunks := chunked.Chunks(); len(chunks) != 1 {
		return array.Concatenate(chunks, mem)
	}
	a := chunked.Chunk(0)
	a.Retain()
	return a, nil
}

func (p *parquetBatches) release() {
	if p.cur != nil {
		p.cur.Release()
		p.cur = nil
	}
}

// close releases the batch and the column readers.
func (p *parquetBatches) close() {
	p.release()
	for _, c := range p.columns {
		c.Release()
	}
	p.columns = nil
}
