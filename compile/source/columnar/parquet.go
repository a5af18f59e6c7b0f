package columnar

import (
	"errors"

	"github.com/lutkit/lutkit/compile/source"

	"context"
	"fmt"
	"os"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// openParquet opens a Parquet file and reads it one record batch at a
// time (parquetBatches) through the Arrow conversion of pqarrow.
func openParquet(path string) (source.Reader, error) {
	return openParquetWith(path, memory.DefaultAllocator)
}

// openParquetWith is openParquet, allocating the pages and the record
// batches it reads from mem.
func openParquetWith(path string, mem memory.Allocator) (_ source.Reader, err error) {
	var pf *file.Reader
	// Decoding the footer trusts its lengths and offsets, and can panic
	// on a corrupt file; report that as an error instead.
	defer func() {
		if p := recover(); p != nil {
			if pf != nil {
				pf.Close()
			}
			err = fmt.Errorf("%s: corrupt Parquet file: %v", path, p)
		}
	}()
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	// A page holds at most the file, and decodes to at most
	// memLimit(size) bytes: arrow-go allocates by the sizes a page
	// header gives before it reads the page.
	rprops := parquet.NewReaderProperties(mem)
	rprops.MaxCompressedPageSize = min(rprops.MaxCompressedPageSize, max(st.Size(), 1))
	rprops.MaxUncompressedPageSize = min(rprops.MaxUncompressedPageSize, memLimit(st.Size()))
	pf, err = file.OpenParquetFile(path, false, file.WithReadProps(rprops))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := checkPages(path, st.Size(), pf); err != nil {
		pf.Close()
		return nil, err
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, mem)
	if err != nil {
		pf.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	batches, err := newParquetBatches(fr, mem)
	if err != nil {
		pf.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	closeFn := func() error {
		batches.close()
		return pf.Close()
	}
	r, err := newBatchReader(path, "Parquet", batches.schema, batches.next, closeFn)
	if err != nil {
		return nil, err
	}
	// The rows are not counted against a budget (maxRead): Parquet's
	// delta and run-length encodings hold a column of distinct keys
	// counting up in a few bits a row.
	r.maxValues = maxNestedValues(st.Size())
	r.locate = func(after int64, cause error) error {
		rg, col, first, n, ok := findCorruptChunk(pf, fr, len(r.columns), after)
		if !ok {
			return nil
		}
		return fmt.Errorf("%s: corrupt Parquet page in column %q of row group %d of %d (rows %d-%d): %w",
			path, r.columns[col], rg+1, pf.NumRowGroups(), first+1, first+n, cause)
	}
	return r, nil
}

// findCorruptChunk finds the column chunk that a read of the rows after
// row after failed on: it reads each chunk of each row group from the one
// holding row after+1 on, column by column, until one fails. It returns
// the row group's and the column's index, and the rows of the row group
// (first is the number of rows before it).
func findCorruptChunk(pf *file.Reader, fr *pqarrow.FileReader, columns int, after int64) (rg, col int, first, n int64, ok bool) {
	md := pf.MetaData()
	for rg = 0; rg < pf.NumRowGroups(); rg++ {
		n = md.RowGroup(rg).NumRows()
		if first+n > after {
			for col = 0; col < columns; col++ {
				if readChunk(fr, rg, col, n) != nil {
					return rg, col, first, n, true
				}
			}
		}
		first += n
	}
	return 0, 0, 0, 0, false
}

// readChunk reads column col of row group rg, of n rows, recovering from
// a panic of the decoder.
func readChunk(fr *pqarrow.FileReader, rg, col int, n int64) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%v", p)
		}
	}()
	chunked, err := fr.RowGroup(rg).Column(col).Read(context.Background())
	if chunked != nil {
		if err == nil && int64(chunked.Len()) != n {
			err = fmt.Errorf("%d values, want %d", chunked.Len(), n)
		}
		chunked.Release()
	}
	return err
}

// checkPages checks the pages of the Parquet file pf, of size bytes, at
// path with checkParquetPages: a page that takes more than memLimit(size)
// bytes to decode is an error naming its column and row group.
func checkPages(path string, size int64, pf *file.Reader) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	limit := memLimit(size)
	md := pf.MetaData()
	err = checkParquetPages(f, size, md, limit)
	var pe *pageCheckError
	if !errors.As(err, &pe) {
		return err
	}
	var first int64
	for rg := range pe.rg {
		first += md.RowGroup(rg).NumRows()
	}
	return fmt.Errorf("%s: corrupt Parquet page in column %q of row group %d of %d (rows %d-%d): %w",
		path, md.Schema.Column(pe.col).Path(), pe.rg+1, md.NumRowGroups(), first+1, first+md.RowGroup(pe.rg).NumRows(), pe.err)
}
