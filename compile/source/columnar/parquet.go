package columnar

import (
	"errors"

	"github.com/lutkit/lutkit/compile/source"

	"context"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// parquetBatchRows is the number of rows decoded at a time from a Parquet
// file.
const parquetBatchRows = 64 << 10

// openParquet opens a Parquet file and reads it one record batch at a
// time through the Arrow conversion of pqarrow.
func openParquet(path string) (source.Reader, error) {
	pf, err := file.OpenParquetFile(path, false)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	props := pqarrow.ArrowReadProperties{BatchSize: parquetBatchRows}
	fr, err := pqarrow.NewFileReader(pf, props, memory.DefaultAllocator)
	if err != nil {
		pf.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	rr, err := fr.GetRecordReader(context.Background(), nil, nil)
	if err != nil {
		pf.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	next := func() (arrow.RecordBatch, error) {
		if rr.Next() {
			return rr.RecordBatch(), nil // valid until the next call
		}
		if err := rr.Err(); err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		return nil, io.EOF
	}
	closeFn := func() error {
		rr.Release()
		return pf.Close()
	}
	return newBatchReader(path, rr.Schema(), next, closeFn)
}
