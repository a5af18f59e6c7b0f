package columnar

import (
	"github.com/lutkit/lutkit/compile/source"

	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
)

// arrowMagic starts (and ends) an Arrow IPC file; a file without it is
// read as an Arrow IPC stream.
var arrowMagic = []byte("ARROW1")

// openArrow opens an Arrow IPC file (also known as Feather version 2) or
// an Arrow IPC stream, reading one record batch at a time. The messages
// are read by ipcMessages, and decoded by arrow-go with at most
// memLimit(size) bytes held at once.
func openArrow(path string) (_ source.Reader, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	// Decoding the schema trusts its lengths and offsets, and can panic
	// on a corrupt file; report that as an error instead.
	defer func() {
		if p := recover(); p != nil {
			f.Close()
			err = fmt.Errorf("%s: corrupt Arrow file: %v", path, p)
		}
	}()
	size, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	mem := newLimitAllocator(memLimit(size))
	msgs := &ipcMessages{r: f, size: size, mem: mem}
	kind := "stream"
	head := make([]byte, len(arrowMagic))
	if n, _ := f.ReadAt(head, 0); n == len(arrowMagic) && bytes.Equal(head, arrowMagic) {
		kind = "file"
		err = msgs.readFooter()
	}
	var sr *ipc.Reader
	if err == nil {
		sr, err = ipc.NewReaderFromMessageReader(msgs, ipc.WithAllocator(mem))
	}
	if err != nil {
		f.Close()
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return nil, fmt.Errorf("%s: corrupt Arrow %s: %w", path, kind, err)
	}
	next := func() (arrow.RecordBatch, error) {
		if sr.Next() {
			return sr.RecordBatch(), nil // valid until the next call
		}
		if err := sr.Err(); err != nil {
			return nil, err
		}
		return nil, io.EOF
	}
	closeFn := func() error {
		sr.Release()
		return f.Close()
	}
	r, err := newBatchReader(path, "Arrow", sr.Schema(), next, closeFn)
	if err != nil {
		return nil, err
	}
	r.maxValues = maxNestedValues(size)
	r.budget = newReadBudget(size)
	return r, nil
}

// batchReader turns a sequence of Arrow record batches into rows of text
// fields. The batch returned by next must stay valid until next is called
// again; the reader does not release it.
type batchReader struct {
	name    string
	columns []string
	types   []string // ColumnTypes
	next    func() (arrow.RecordBatch, error)
	closeFn func() error

	rec   arrow.RecordBatch
	conv  []appendFunc
	row   int // next row of rec
	nrows int
	batch int // the number of the batch read last, from 1

	// format names the file format in errors; locate, if not nil, returns
	// the error naming the part of the file that holds the data the
	// reader failed to decode (err) after row after, or nil when it
	// cannot tell.
	format string
	locate func(after int64, err error) error

	// maxValues is the most values a nested value may hold
	// (nestedValues).
	maxValues int64
	// budget, if not nil, counts the rows and the nested values read
	// against what the file may hold.
	budget *readBudget

	buf    []byte
	ends   []int
	fields [][]byte
	line   int64
	err    error
}

// corrupt describes the failure err of reading or converting the batch
// after row r.line, which did not decode: the underlying detail comes
// after a plain account of where. A read error of the file stays one.
func (r *batchReader) corrupt(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: after row %d: %w", r.name, r.line, err)
	}
	if r.locate != nil {
		if lerr := r.locate(r.line, err); lerr != nil {
			return lerr
		}
	}
	return fmt.Errorf("%s: corrupt %s data in record batch %d (after row %d): %w", r.name, r.format, r.batch, r.line, err)
}

// appendFunc appends the text form of row i of one column to dst.
type appendFunc func(dst []byte, i int) []byte

func newBatchReader(name, format string, schema *arrow.Schema, next func() (arrow.RecordBatch, error), closeFn func() error) (*batchReader, error) {
	cols := make([]string, schema.NumFields())
	for i, f := range schema.Fields() {
		cols[i] = f.Name
	}
	if err := source.CheckColumnNames(cols); err != nil {
		return nil, errors.Join(fmt.Errorf("%s: %w", name, err), closeFn())
	}
	types := make([]string, len(cols))
	for i, f := range schema.Fields() {
		types[i] = columnType(f.Type)
	}
	r := &batchReader{
		name:    name,
		format:  format,
		columns: cols,
		types:   types,
		next:    next,
		closeFn: closeFn,
		conv:    make([]appendFunc, len(cols)),
		ends:    make([]int, len(cols)),
		fields:  make([][]byte, len(cols)),
	}
	r.maxValues = maxNestedValues(0) // the caller sets it by the file's size
	return r, nil
}

func (r *batchReader) Columns() []string { return r.columns }

// ColumnTypes types the columns by their schema (source.Typed).
func (r *batchReader) ColumnTypes() []string { return r.types }

// columnType is the .lut column type of the text form textAppender gives
// a value of type t: integers and decimals are JSON numbers, and so are
// floats but for NaN and the infinities (a row error when typed); booleans
// are true or false; everything else is text.
func columnType(t arrow.DataType) string {
	switch t.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64,
		arrow.FLOAT16, arrow.FLOAT32, arrow.FLOAT64, arrow.DECIMAL32, arrow.DECIMAL64, arrow.DECIMAL128, arrow.DECIMAL256:
		return "number"
	case arrow.BOOL:
		return "bool"
	case arrow.DICTIONARY:
		return columnType(t.(*arrow.DictionaryType).ValueType)
	}
	return ""
}

func (r *batchReader) Line() int64 { return r.line }

func (r *batchReader) Next() (_ [][]byte, err error) {
	if r.err != nil {
		return nil, r.err
	}
	// Arrow decoding trusts the file's metadata and can panic on a
	// corrupt file; report that as an error instead.
	defer func() {
		if p := recover(); p != nil {
			r.rec = nil
			r.err = r.corrupt(fmt.Errorf("%v", p))
			err = r.err
		}
	}()
	for r.rec == nil || r.row >= r.nrows {
		r.batch++
		rec, err := r.next()
		if err != nil {
			r.rec = nil
			if errors.Is(err, io.EOF) {
				r.err = io.EOF
			} else {
				r.err = r.corrupt(err)
			}
			return nil, r.err
		}
		if int(rec.NumCols()) != len(r.columns) {
			r.err = fmt.Errorf("%s: record batch has %d columns, schema has %d", r.name, rec.NumCols(), len(r.columns))
			return nil, r.err
		}
		if err := r.budget.take(rec.NumRows(), "rows"); err != nil {
			r.rec = nil
			r.err = r.corrupt(err)
			return nil, r.err
		}
		r.rec, r.row, r.nrows = rec, 0, int(rec.NumRows())
		for i := range r.conv {
			r.conv[i] = textAppender(rec.Column(i), r.maxValues, r.budget)
		}
	}
	buf := r.buf[:0]
	for c, conv := range r.conv {
		buf = conv(buf, r.row)
		r.ends[c] = len(buf)
	}
	r.buf = buf
	source.SplitFields(r.fields, buf, r.ends)
	r.row++
	r.line++
	if !source.ValidFields(buf, r.fields) {
		return nil, r.utf8Error()
	}
	return r.fields, nil
}

// utf8Error is the row error for the first value of the row that is not
// UTF-8 text: a string holding invalid UTF-8, or a binary value of bytes
// that are not text. A binary value is its bytes when they are UTF-8
// text; binary data has no text form of its own.
func (r *batchReader) utf8Error() error {
	for i, f := range r.fields {
		if utf8.Valid(f) {
			continue
		}
		col := r.columns[i]
		err := fmt.Errorf("invalid UTF-8 in column %q, row %d", col, r.line)
		if isBinary(r.rec.Column(i).DataType()) {
			err = fmt.Errorf("binary value in column %q, row %d, is not UTF-8 text; write a text form of it (such as hex) to the file", col, r.line)
		}
		return &source.RowError{File: r.name, Line: r.line, Column: i + 1, Err: err}
	}
	return nil
}

// isBinary reports whether t holds binary values (of a dictionary too).
func isBinary(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.BINARY, arrow.LARGE_BINARY, arrow.BINARY_VIEW, arrow.FIXED_SIZE_BINARY:
		return true
	case arrow.DICTIONARY:
		return isBinary(t.(*arrow.DictionaryType).ValueType)
	}
	return false
}

func (r *batchReader) Close() error {
	if r.closeFn == nil {
		return nil
	}
	err := r.closeFn()
	r.closeFn = nil
	r.rec = nil
	if r.err == nil {
		r.err = errors.New("source: reader closed")
	}
	return err
}

// textAppender returns a function that appends the text form of a value
// of arr: strings and binary as they are, integers in decimal, floats in
// the shortest form that reads back exactly ('g', -1), booleans as true or
// false, dates as 2006-01-02, times of day as 15:04:05.999999999,
// timestamps in RFC 3339 (with the offset of the column's time zone, or
// without an offset when the column has no time zone), decimals in plain
// decimal notation, and null as the empty string. Other types use
// arrow-go's ValueStr form, a nested value of at most maxValues values
// (nestedValues), taken from budget (when not nil): a larger one panics.
func textAppender(arr arrow.Array, maxValues int64, budget *readBudget) appendFunc {
	nulls := arr.NullN() > 0
	wrap := func(f appendFunc) appendFunc {
		if !nulls {
			return f
		}
		return func(dst []byte, i int) []byte {
			if arr.IsNull(i) {
				return dst
			}
			return f(dst, i)
		}
	}
	switch a := arr.(type) {
	case *array.Null:
		return func(dst []byte, _ int) []byte { return dst }
	case *array.String:
		return wrap(func(dst []byte, i int) []byte { return append(dst, a.Value(i)...) })
	case *array.LargeString:
		return wrap(func(dst []byte, i int) []byte { return append(dst, a.Value(i)...) })
	case *array.StringView:
		return wrap(func(dst []byte, i int) []byte { return append(dst, a.Value(i)...) })
	case *array.Binary:
		return wrap(func(dst []byte, i int) []byte { return append(dst, a.Value(i)...) })
	case *array.LargeBinary:
		return wrap(func(dst []byte, i int) []byte { return append(dst, a.Value(i)...) })
	case *array.BinaryView:
		return wrap(func(dst []byte, i int) []byte { return append(dst, a.Value(i)...) })
	case *array.FixedSizeBinary:
		return wrap(func(dst []byte, i int) []byte { return append(dst, a.Value(i)...) })
	case *array.Int8:
		return wrap(func(dst []byte, i int) []byte { return strconv.AppendInt(dst, int64(a.Value(i)), 10) })
	case *array.Int16:
		return wrap(func(dst []byte, i int) []byte { return strconv.AppendInt(dst, int64(a.Value(i)), 10) })
	case *array.Int32:
		return wrap(func(dst []byte, i int) []byte { return strconv.AppendInt(dst, int64(a.Value(i)), 10) })
	case *array.Int64:
		return wrap(func(dst []byte, i int) []byte { return strconv.AppendInt(dst, a.Value(i), 10) })
	case *array.Uint8:
		return wrap(func(dst []byte, i int) []byte { return strconv.AppendUint(dst, uint64(a.Value(i)), 10) })
	case *array.Uint16:
		return wrap(func(dst []byte, i int) []byte { return strconv.AppendUint(dst, uint64(a.Value(i)), 10) })
	case *array.Uint32:
		return wrap(func(dst []byte, i int) []byte { return strconv.AppendUint(dst, uint64(a.Value(i)), 10) })
	case *array.Uint64:
		return wrap(func(dst []byte, i int) []byte { return strconv.AppendUint(dst, a.Value(i), 10) })
	case *array.Float16:
		return wrap(func(dst []byte, i int) []byte {
			return strconv.AppendFloat(dst, float64(a.Value(i).Float32()), 'g', -1, 32)
		})
	case *array.Float32:
		return wrap(func(dst []byte, i int) []byte { return strconv.AppendFloat(dst, float64(a.Value(i)), 'g', -1, 32) })
	case *array.Float64:
		return wrap(func(dst []byte, i int) []byte { return strconv.AppendFloat(dst, a.Value(i), 'g', -1, 64) })
	case *array.Boolean:
		return wrap(func(dst []byte, i int) []byte { return strconv.AppendBool(dst, a.Value(i)) })
	case *array.Date32:
		return wrap(func(dst []byte, i int) []byte { return a.Value(i).ToTime().AppendFormat(dst, time.DateOnly) })
	case *array.Date64:
		return wrap(func(dst []byte, i int) []byte { return a.Value(i).ToTime().AppendFormat(dst, time.DateOnly) })
	case *array.Time32:
		unit := a.DataType().(*arrow.Time32Type).Unit
		return wrap(func(dst []byte, i int) []byte { return a.Value(i).ToTime(unit).AppendFormat(dst, "15:04:05.999999999") })
	case *array.Time64:
		unit := a.DataType().(*arrow.Time64Type).Unit
		return wrap(func(dst []byte, i int) []byte { return a.Value(i).ToTime(unit).AppendFormat(dst, "15:04:05.999999999") })
	case *array.Timestamp:
		tt := a.DataType().(*arrow.TimestampType)
		layout := time.RFC3339Nano
		var loc *time.Location
		if tt.TimeZone == "" {
			layout = "2006-01-02T15:04:05.999999999"
		} else if l, err := tt.GetZone(); err == nil && l != nil {
			loc = l
		} else {
			loc = time.UTC
		}
		return wrap(func(dst []byte, i int) []byte {
			t := a.Value(i).ToTime(tt.Unit)
			if loc != nil {
				t = t.In(loc)
			}
			return t.AppendFormat(dst, layout)
		})
	case *array.Decimal32:
		return wrap(decimalAppender(a, a.Value))
	case *array.Decimal64:
		return wrap(decimalAppender(a, a.Value))
	case *array.Decimal128:
		return wrap(decimalAppender(a, a.Value))
	case *array.Decimal256:
		return wrap(decimalAppender(a, a.Value))
	case *array.Dictionary:
		dict := textAppender(a.Dictionary(), maxValues, budget)
		return wrap(func(dst []byte, i int) []byte { return dict(dst, a.GetValueIndex(i)) })
	}
	return wrap(func(dst []byte, i int) []byte {
		n := nestedValues(arr, int64(i), int64(i)+1, maxValues)
		if n > maxValues {
			panic(fmt.Sprintf("a nested value holds more than %d values, more than a file of its size may decode to", maxValues))
		}
		if err := budget.take(n, "nested values"); err != nil {
			panic(err.Error())
		}
		return append(dst, arr.ValueStr(i)...)
	})
}

// decimalAppender formats decimals with exactly the column's scale
// ("123.50" for scale 2).
func decimalAppender[T interface{ ToString(int32) string }](arr arrow.Array, value func(int) T) appendFunc {
	dt, ok := arr.DataType().(arrow.DecimalType)
	if !ok {
		return func(dst []byte, i int) []byte { return append(dst, arr.ValueStr(i)...) }
	}
	scale := dt.GetScale()
	return func(dst []byte, i int) []byte {
		return append(dst, value(i).ToString(scale)...)
	}
}
