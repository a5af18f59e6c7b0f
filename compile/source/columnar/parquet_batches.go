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
// file, a row group at a time, each column with its pqarrow.ColumnReader.
// A batch ends at its row group's end, and every column gives each batch
// the rows the row group's footer gives: a column that gives fewer or
// more (a damaged page header) is a corrupt file, not a file of fewer
// rows or of rows whose columns do not match.
type parquetBatches struct {
	fr      *pqarrow.FileReader
	leaves  []int
	schema  *arrow.Schema
	columns []*pqarrow.ColumnReader // of row group rg-1
	mem     memory.Allocator
	rg      int   // the next row group
	left    int64 // rows of the current row group not read
	rows    int64 // of the next batch
	read    int64 // rows read
	cur     arrow.RecordBatch
}

// newParquetBatches reads the rows of every row group of fr.
func newParquetBatches(fr *pqarrow.FileReader, mem memory.Allocator) (*parquetBatches, error) {
	leaves := make([]int, fr.ParquetReader().MetaData().Schema.NumColumns())
	for i := range leaves {
		leaves[i] = i
	}
	// The schema of the readers, of no row group.
	columns, schema, err := fr.GetFieldReaders(context.Background(), leaves, []int{})
	if err != nil {
		return nil, err
	}
	for _, c := range columns {
		c.Release()
	}
	if len(columns) == 0 {
		return nil, errors.New("no columns")
	}
	return &parquetBatches{fr: fr, leaves: leaves, schema: schema, mem: mem, rows: parquetFirstBatchRows}, nil
}

// next returns the next record batch, valid until the next call, or
// io.EOF after the last.
func (p *parquetBatches) next() (arrow.RecordBatch, error) {
	p.release()
	for p.left == 0 {
		if err := p.endGroup(); err != nil {
			return nil, err
		}
		pf := p.fr.ParquetReader()
		if p.rg == pf.NumRowGroups() {
			return nil, io.EOF
		}
		columns, _, err := p.fr.GetFieldReaders(context.Background(), p.leaves, []int{p.rg})
		if err != nil {
			return nil, err
		}
		p.columns, p.left = columns, pf.MetaData().RowGroup(p.rg).NumRows()
		p.rg++
		if p.left < 0 {
			return nil, fmt.Errorf("row group %d has %d rows", p.rg, p.left)
		}
	}
	want := min(p.rows, p.left)
	cols := make([]arrow.Array, len(p.columns))
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	for i, c := range p.columns {
		chunked, err := c.NextBatch(want)
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		if n := chunkedLen(chunked); n != int(want) {
			release(chunked)
			return nil, fmt.Errorf("column %q gives %d rows where row group %d has %d more after row %d",
				p.schema.Field(i).Name, n, p.rg, p.left, p.read)
		}
		cols[i], err = singleArray(chunked, p.mem)
		chunked.Release()
		if err != nil {
			return nil, err
		}
	}
	p.cur = array.NewRecordBatch(p.schema, cols, want)
	p.left -= want
	p.read += want
	if want == p.rows {
		p.rows = nextBatchRows(want, recordBytes(p.cur))
	} else if b := recordBytes(p.cur); b > 0 {
		// Cut short by the row group's end: the rows' size still counts.
		p.rows = min(p.rows, max(parquetBatchBytes*want/b, 1))
	}
	return p.cur, nil
}

// endGroup checks that every column of the row group read gives no row
// past those of its footer, and releases the column readers.
func (p *parquetBatches) endGroup() error {
	columns := p.columns
	p.columns = nil
	defer func() {
		for _, c := range columns {
			c.Release()
		}
	}()
	for i, c := range columns {
		chunked, err := c.NextBatch(1)
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		n := chunkedLen(chunked)
		release(chunked)
		if n > 0 {
			rows := p.fr.ParquetReader().MetaData().RowGroup(p.rg - 1).NumRows()
			return fmt.Errorf("column %q gives more rows than the %d of row group %d", p.schema.Field(i).Name, rows, p.rg)
		}
	}
	return nil
}

// chunkedLen is the length of c, 0 for nil.
func chunkedLen(c *arrow.Chunked) int {
	if c == nil {
		return 0
	}
	return c.Len()
}

func release(c *arrow.Chunked) {
	if c != nil {
		c.Release()
	}
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
