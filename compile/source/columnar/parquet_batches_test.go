package columnar

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// readParquetPeak writes data to path and reads it as readParquetRows
// does, through openParquetWith and a limitAllocator without a limit, and
// returns the most bytes the reader held at once.
func readParquetPeak(t *testing.T, path string, data []byte, rows int, check func(i int, fields [][]byte)) int64 {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	// It sees the buffers of the pages the reader reads and of the record
	// batches it makes of them (values, offsets, validity bitmaps,
	// dictionary indexes), not the Go slices arrow-go makes by itself (the
	// definition levels of a batch, a few bytes a row); runtime/metrics
	// would see those, with the garbage a collection has not yet freed,
	// which is no measure of what a reader holds.
	mem := newLimitAllocator(math.MaxInt64)
	r, err := openParquetWith(path, mem)
	if err != nil {
		t.Fatal(err)
	}
	readRows(t, r, rows, check)
	return mem.peak.Load()
}

// longValue is a string of 1,000 bytes that starts with i.
func longValue(i int) string {
	s := fmt.Sprintf("%08d", i)
	return s + strings.Repeat("x", 1000-len(s))
}

// TestParquetLongValues reads files of 70,000 rows of values of 1,000
// bytes, which a compressed page or a dictionary holds in a few bytes a
// row: a batch is as many rows as take about parquetBatchBytes, so the
// reader holds at once at most memLimitFloor, far less than the file's
// limit. In batches of 65,536 rows the reader held 37-73 MB at once
// (67.7 MB for one repeated value in a 74 KB file). Every row reads,
// with its value: of one value repeated, of a dictionary that falls back
// to plain pages, of a value and nulls, of many row groups, and of long
// and short values mixed. Rows that turn long after 40,000 short ones are
// read in a batch sized for the short ones: within the file's limit only.
func TestParquetLongValues(t *testing.T) {
	zstd := parquet.WithCompression(compress.Codecs.Zstd)
	str := arrow.BinaryTypes.String
	kv := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "v", Type: str, Nullable: true},
	}, nil)
	// kvRows is the fill of kv's rows: id is the row's index, v is
	// value(i), null where null(i).
	kvRows := func(value func(i int) string, null func(i int) bool) func(b *array.RecordBuilder, start, count int) {
		return func(b *array.RecordBuilder, start, count int) {
			for i := start; i < start+count; i++ {
				b.Field(0).(*array.Int64Builder).Append(int64(i))
				if null(i) {
					b.Field(1).AppendNull()
				} else {
					b.Field(1).(*array.StringBuilder).Append(value(i))
				}
			}
		}
	}
	never := func(int) bool { return false }
	mixed := func(i int) string {
		if i%10 < 3 {
			return longValue(i)
		}
		return fmt.Sprint(i)
	}
	same := longValue(0)
	shortLong := func(i int) string {
		if i < 40_000 {
			return "s"
		}
		return same
	}
	for _, tc := range []struct {
		name  string
		rows  int
		data  func(t *testing.T) []byte
		want  func(i int) string // the value of v; "" for a null
		plain bool               // the column of v has plain data pages
		// jump: the rows turn long after 40,000 short ones, and are
		// read in a batch sized for those.
		jump bool
	}{
		{"repeated", 70_000, func(t *testing.T) []byte {
			return writeParquetColumn(t, str, 70_000, sameStrings(same), zstd)
		}, func(int) string { return same }, false, false},
		{"dictionary_fallback", 30_000, func(t *testing.T) []byte {
			return writeParquetRows(t, kv, 30_000, kvRows(longValue, never), zstd, parquet.WithDictionaryPageSizeLimit(64<<10))
		}, longValue, true, false},
		{"nulls", 70_000, func(t *testing.T) []byte {
			return writeParquetRows(t, kv, 70_000, kvRows(func(int) string { return same }, func(i int) bool { return i%3 == 1 }), zstd)
		}, func(i int) string {
			if i%3 == 1 {
				return ""
			}
			return same
		}, false, false},
		{"row_groups", 70_000, func(t *testing.T) []byte {
			return writeParquetRows(t, kv, 70_000, kvRows(longValue, never), zstd, parquet.WithMaxRowGroupLength(20_000))
		}, longValue, true, false},
		{"mixed", 70_000, func(t *testing.T) []byte {
			return writeParquetRows(t, kv, 70_000, kvRows(mixed, never), zstd, parquet.WithMaxRowGroupLength(25_000))
		}, mixed, true, false},
		{"short_then_long", 70_000, func(t *testing.T) []byte {
			return writeParquetRows(t, kv, 70_000, kvRows(shortLong, never), zstd)
		}, shortLong, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := tc.data(t)
			pf, err := file.NewParquetReader(bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			md := pf.MetaData()
			plain := false
			for rg := range md.NumRowGroups() {
				cc, err := md.RowGroup(rg).ColumnChunk(md.Schema.NumColumns() - 1)
				if err != nil {
					t.Fatal(err)
				}
				for _, s := range cc.EncodingStats() {
					plain = plain || s.PageType.String() != "DICTIONARY_PAGE" && s.Encoding == parquet.Encodings.Plain
				}
			}
			if plain != tc.plain {
				t.Fatalf("plain data pages: %v, want %v", plain, tc.plain)
			}
			peak := readParquetPeak(t, filepath.Join(t.TempDir(), tc.name+".parquet"), data, tc.rows, func(i int, fields [][]byte) {
				v := fields[len(fields)-1]
				if string(v) != tc.want(i) || len(fields) == 2 && string(fields[0]) != fmt.Sprint(i) {
					t.Fatalf("row %d: %.20q..., want %.20q...", i+1, fields, tc.want(i))
				}
			})
			limit := int64(memLimitFloor)
			if tc.jump {
				limit = memLimit(int64(len(data)))
			}
			t.Logf("%d bytes in %d row groups, held %d at once (limit %d)", len(data), md.NumRowGroups(), peak, limit)
			if peak > limit {
				t.Errorf("held %d bytes at once, more than %d", peak, limit)
			}
		})
	}
}

// TestParquetBatchRows: a batch is twice the rows of the one before, up
// to parquetBatchRows, or fewer, as many as take parquetBatchBytes at the
// bytes a row of the one before; at least one.
func TestParquetBatchRows(t *testing.T) {
	for _, tc := range []struct{ rows, bytes, want int64 }{
		{parquetFirstBatchRows, 16 * parquetFirstBatchRows, 2 * parquetFirstBatchRows},
		{parquetBatchRows / 2, 0, parquetBatchRows},
		{parquetBatchRows, 16 * parquetBatchRows, parquetBatchRows},
		{parquetFirstBatchRows, 4000 * parquetFirstBatchRows, parquetBatchBytes / 4000},
		{1048, parquetBatchBytes, 1048},
		{10, 100 * parquetBatchBytes, 1},
	} {
		if got := nextBatchRows(tc.rows, tc.bytes); got != tc.want {
			t.Errorf("after %d rows of %d bytes: %d rows, want %d", tc.rows, tc.bytes, got, tc.want)
		}
	}
}

// TestParquetColumnsAgree damages a two-column file of two row groups
// (4,096 and 1,024 rows) a byte at a time: the first 32 bytes of each
// column chunk's first page header, and every byte of the footer. Every
// read either fails or gives every row with its own values. A page
// header or a footer that gives a column fewer or more values than its
// row group's rows, or than the other column, is a corrupt file, never a
// file of fewer rows (each column read by its own reader ended the file
// at the shorter one: 0 or 2,936 of 3,000 rows) nor of rows whose columns
// do not match (a chunk's footer giving 2,048 values of a row group of
// 4,096 shifted that column's later rows).
func TestParquetColumnsAgree(t *testing.T) {
	sweep(t)
	const n = 5120
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.PrimitiveTypes.Int64},
		{Name: "v", Type: arrow.BinaryTypes.String},
	}, nil)
	value := func(i int) string { return fmt.Sprintf("value-%d", i) }
	data := writeParquetRows(t, schema, n, func(b *array.RecordBuilder, start, count int) {
		for i := start; i < start+count; i++ {
			b.Field(0).(*array.Int64Builder).Append(int64(i))
			b.Field(1).(*array.StringBuilder).Append(value(i))
		}
	}, parquet.WithDictionaryDefault(false), parquet.WithDataPageSize(1024), parquet.WithMaxRowGroupLength(4096))
	pf, err := file.NewParquetReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	// A page header is followed by the page's values, which a damaged
	// byte may change: past a header, only the rows are counted.
	type span struct {
		from, to int
		values   bool
	}
	var spans []span
	for rg := range pf.NumRowGroups() {
		for i := range 2 {
			cc, err := pf.MetaData().RowGroup(rg).ColumnChunk(i)
			if err != nil {
				t.Fatal(err)
			}
			spans = append(spans, span{int(cc.DataPageOffset()), int(cc.DataPageOffset()) + 32, false})
		}
	}
	pf.Close()
	footer := int(binary.LittleEndian.Uint32(data[len(data)-8:]))
	spans = append(spans, span{len(data) - 8 - footer, len(data) - 8, true})
	var refused, whole int
	var agree error // the last refusal of the check itself
	for _, sp := range spans {
		eachByteSet(t, data, sp.from, sp.to, func(path string, pos int, b byte) {
			rows, wrong, err := readChecked(path, func(i int, fields [][]byte) bool {
				return len(fields) == 2 && string(fields[0]) == fmt.Sprint(i) && string(fields[1]) == value(i)
			})
			switch {
			case err != nil:
				refused++
				if strings.Contains(err.Error(), " gives ") {
					agree = err
				}
			case rows == n && (wrong < 0 || !sp.values):
				whole++
			case rows == n:
				t.Errorf("byte %d set to %#x: row %d is not its own, and no error", pos, b, wrong+1)
			default:
				t.Errorf("byte %d set to %#x: %d rows of %d, and no error", pos, b, rows, n)
			}
		})
	}
	t.Logf("%d damaged files refused, %d read whole; the columns' check: %v", refused, whole, agree)
	if agree == nil {
		t.Errorf("no file refused for columns that disagree with the footer or with each other")
	}
}

// readChecked reads the Parquet file at path to its end and returns its
// rows and the first row (0-based) that ok refuses, -1 if none, or the
// error that ended the read.
func readChecked(path string, ok func(i int, fields [][]byte) bool) (rows, wrong int, err error) {
	r, err := openParquet(path)
	if err != nil {
		return 0, -1, err
	}
	defer r.Close()
	wrong = -1
	for rows = 0; ; rows++ {
		fields, err := r.Next()
		if errors.Is(err, io.EOF) {
			return rows, wrong, nil
		}
		if err != nil {
			return rows, wrong, err
		}
		if wrong < 0 && !ok(rows, fields) {
			wrong = rows
		}
	}
}

// TestParquetRowGroupRows: a footer that gives the first row group, and
// its first column's chunk, 2,048 rows where the chunks hold 4,096 (the
// file then 3,072 rows) is a corrupt file. Read a column at a time
// across row groups, it read 3,072 rows with no error, the second
// column's rows from 2,048 on those of other rows than the first's.
func TestParquetRowGroupRows(t *testing.T) {
	const n = 5120
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.PrimitiveTypes.Int64},
		{Name: "v", Type: arrow.BinaryTypes.String},
	}, nil)
	data := writeParquetRows(t, schema, n, func(b *array.RecordBuilder, start, count int) {
		for i := start; i < start+count; i++ {
			b.Field(0).(*array.Int64Builder).Append(int64(i))
			b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("value-%d", i))
		}
	}, parquet.WithDictionaryDefault(false), parquet.WithDataPageSize(1024), parquet.WithMaxRowGroupLength(4096))
	// In the footer (Thrift's compact protocol), an i64 field that follows
	// the field before it is 0x16 and its zigzag varint: 4,096 is 80 40,
	// 2,048 80 20, 5,120 80 50 and 3,072 80 30. 4,096 is, in this order,
	// the first chunk's values, the second chunk's and the row group's
	// rows; 5,120 the file's rows.
	footer := len(data) - 8 - int(binary.LittleEndian.Uint32(data[len(data)-8:]))
	at := func(b []byte) []int {
		var offs []int
		for i := footer; i < len(data)-8; {
			j := bytes.Index(data[i:len(data)-8], b)
			if j < 0 {
				break
			}
			offs = append(offs, i+j)
			i += j + 1
		}
		return offs
	}
	rows4096, rows5120 := at([]byte{0x16, 0x80, 0x40}), at([]byte{0x16, 0x80, 0x50})
	if len(rows4096) != 3 || len(rows5120) != 1 {
		t.Fatalf("the footer holds 4,096 %d times and 5,120 %d times, want 3 and 1: not the footer this test knows", len(rows4096), len(rows5120))
	}
	damaged := bytes.Clone(data)
	damaged[rows4096[0]+2] = 0x20 // the first chunk: 2,048 values
	damaged[rows4096[2]+2] = 0x20 // the row group: 2,048 rows
	damaged[rows5120[0]+2] = 0x30 // the file: 3,072 rows
	path := filepath.Join(t.TempDir(), "f.parquet")
	if err := os.WriteFile(path, damaged, 0o644); err != nil {
		t.Fatal(err)
	}
	rows, wrong, err := readChecked(path, func(i int, fields [][]byte) bool {
		return len(fields) == 2 && strings.TrimPrefix(string(fields[1]), "value-") == string(fields[0])
	})
	if err == nil || !strings.Contains(err.Error(), `column "v" gives more rows than the 2048 of row group 1`) {
		t.Fatalf("%d rows read, the first whose columns do not match: %d; err %v, want column \"v\" refused", rows, wrong+1, err)
	}
	t.Log(err)
}

// TestParquetFooterDamage damages every byte of the footer of a file of
// a struct column in two row groups: every read fails or gives every row.
// arrow-go reads the children of a struct in goroutines of its own, where
// a chunk of a negative length the footer gave ended the process
// (makeslice: len out of range) before the check of the chunks' spans.
func TestParquetFooterDamage(t *testing.T) {
	sweep(t)
	const n = 3000
	data := structParquet(t, n, 2000)
	footer := len(data) - 8 - int(binary.LittleEndian.Uint32(data[len(data)-8:]))
	var refused, whole int
	eachByteSet(t, data, footer, len(data)-8, func(path string, pos int, b byte) {
		rows, _, err := readChecked(path, func(int, [][]byte) bool { return true })
		switch {
		case err != nil:
			refused++
		case rows == n:
			whole++
		default:
			t.Errorf("byte %d set to %#x: %d rows of %d, and no error", pos, b, rows, n)
		}
	})
	t.Logf("%d damaged footers refused, %d read whole", refused, whole)
}

// structParquet is a Parquet file of n rows in row groups of group rows:
// id (int64) and s, a struct of a (int32) and b (string), each i in row i.
func structParquet(t testing.TB, n, group int) []byte {
	st := arrow.StructOf(
		arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		arrow.Field{Name: "b", Type: arrow.BinaryTypes.String, Nullable: true},
	)
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "s", Type: st, Nullable: true}}, nil)
	return writeParquetRows(t, schema, n, func(b *array.RecordBuilder, start, count int) {
		sb := b.Field(1).(*array.StructBuilder)
		for i := start; i < start+count; i++ {
			b.Field(0).(*array.Int64Builder).Append(int64(i))
			sb.Append(true)
			sb.FieldBuilder(0).(*array.Int32Builder).Append(int32(i))
			sb.FieldBuilder(1).(*array.StringBuilder).Append(fmt.Sprint(i))
		}
	}, parquet.WithMaxRowGroupLength(int64(group)))
}

// TestParquetBatchesAcrossRowGroups: a batch cut short by its row group's
// end does not make the next ones small. Of 4 row groups of 1,500 short
// rows, the first is read in 2 batches (1,024 rows, then the 476 left),
// and each other in one; the next batch's rows were once twice the rows
// of a short one, and every row group took 2 batches.
func TestParquetBatchesAcrossRowGroups(t *testing.T) {
	data := structParquet(t, 6000, 1500)
	path := filepath.Join(t.TempDir(), "f.parquet")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	pf, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	p, err := newParquetBatches(fr, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	var sizes []int64
	for {
		rec, err := p.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, rec.NumRows())
	}
	if want := []int64{1024, 476, 1500, 1500, 1500}; !slices.Equal(sizes, want) {
		t.Errorf("batches of %v rows, want %v", sizes, want)
	}
}

// sweep skips a test that reads thousands of damaged files under the race
// detector: one goroutine of its own, and up to 10x slower under the
// detector. make test runs these tests without it (NORACE_TESTS in the
// Makefile).
func sweep(t *testing.T) {
	t.Helper()
	if raceEnabled {
		t.Skip("a sweep of damaged files: make test runs it without the race detector (NORACE_TESTS)")
	}
}

// eachByteSet sets each byte of data in [from, to) to 0, to itself xor 1
// and to itself minus 1 in turn, writes the damaged copy to a file and
// calls read with its path.
func eachByteSet(t *testing.T, data []byte, from, to int, read func(path string, pos int, b byte)) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "f.parquet")
	for pos := from; pos < to; pos++ {
		for _, b := range []byte{0, data[pos] ^ 1, data[pos] - 1} {
			if b == data[pos] {
				continue
			}
			damaged := bytes.Clone(data)
			damaged[pos] = b
			if err := os.WriteFile(path, damaged, 0o644); err != nil {
				t.Fatal(err)
			}
			read(path, pos, b)
		}
	}
}
