package columnar

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/lutkit/lutkit/compile/source"
)

// writeParquetColumn writes a Parquet file of one column k of type dt and
// n rows, in one row group, uncompressed unless opts say otherwise: fill
// appends rows start to start+count to the builder.
func writeParquetColumn(t testing.TB, dt arrow.DataType, n int, fill func(b array.Builder, start, count int), opts ...parquet.WriterProperty) []byte {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{{Name: "k", Type: dt}}, nil)
	return writeParquetRows(t, schema, n, func(b *array.RecordBuilder, start, count int) {
		fill(b.Field(0), start, count)
	}, opts...)
}

// writeParquetRows writes a Parquet file of the columns of schema and n
// rows, in one row group, uncompressed unless opts say otherwise: fill
// appends rows start to start+count to the builder, 65,536 rows at most
// at a time.
func writeParquetRows(t testing.TB, schema *arrow.Schema, n int, fill func(b *array.RecordBuilder, start, count int), opts ...parquet.WriterProperty) []byte {
	t.Helper()
	var buf bytes.Buffer
	opts = append([]parquet.WriterProperty{parquet.WithMaxRowGroupLength(int64(n)), parquet.WithCompression(compress.Codecs.Uncompressed)}, opts...)
	fw, err := pqarrow.NewFileWriter(schema, &buf, parquet.NewWriterProperties(opts...), pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	const chunk = 64 << 10
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for start := 0; start < n; start += chunk {
		fill(b, start, min(chunk, n-start))
		rec := b.NewRecordBatch()
		err := fw.WriteBuffered(rec)
		rec.Release()
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// deltaInts is fill for a column of int64 counting up from 0.
func deltaInts(b array.Builder, start, count int) {
	for i := range count {
		b.(*array.Int64Builder).Append(int64(start + i))
	}
}

// sameStrings is fill for a column of strings that are all s.
func sameStrings(s string) func(b array.Builder, start, count int) {
	return func(b array.Builder, _, count int) {
		for range count {
			b.(*array.StringBuilder).Append(s)
		}
	}
}

// deltaStreamHeader is the header of a DELTA_BINARY_PACKED stream of total
// values, starting at 0, in blocks of blockSize values in miniblocks
// miniblocks.
func deltaStreamHeader(blockSize, miniblocks, total uint64) []byte {
	b := binary.AppendUvarint(nil, blockSize)
	b = binary.AppendUvarint(b, miniblocks)
	b = binary.AppendUvarint(b, total)
	return binary.AppendVarint(b, 0)
}

// deltaStream is a DELTA_BINARY_PACKED stream of total values, starting
// at 0, in blocks of blockSize values in one miniblock, and one block
// whose deltas are all delta (a bit width of 0).
func deltaStream(blockSize, total uint64, delta int64) []byte {
	b := deltaStreamHeader(blockSize, 1, total)
	b = binary.AppendVarint(b, delta)
	return append(b, 0)
}

// replaceOnce replaces the one occurrence of old in data, from offset
// from, with new, byte for byte.
func replaceOnce(t testing.TB, data []byte, from int, old, new []byte) {
	t.Helper()
	i := bytes.Index(data[from:], old)
	if i < 0 || bytes.Contains(data[from+i+1:], old) {
		t.Fatalf("% x not once in the file", old)
	}
	copy(data[from+i:], new)
}

// TestParquetDeltaPages: a page in a delta encoding whose header asks for
// a miniblock of 2^26 values, or a page of a few bytes that claims 2^26
// empty strings, is refused when the file is opened; arrow-go made Go
// slices of 512 MB for each, for a file of a few hundred bytes (2^32
// values took 32 GB, a fatal error of the Go runtime).
func TestParquetDeltaPages(t *testing.T) {
	dir := t.TempDir()
	t.Run("miniblock", func(t *testing.T) {
		data := writeParquetColumn(t, arrow.PrimitiveTypes.Int64, 1000, deltaInts,
			parquet.WithDictionaryDefault(false), parquet.WithEncoding(parquet.Encodings.DeltaBinaryPacked))
		// The values stay 0 to 999, in a miniblock of 2^26.
		replaceOnce(t, data, 4, deltaStreamHeader(128, 4, 1000), deltaStream(1<<26, 1000, 1))
		path := filepath.Join(dir, "miniblock.parquet")
		checkRefused(t, path, data, "a page in a delta encoding takes 536870913 bytes to decode")
	})
	t.Run("lengths", func(t *testing.T) {
		const n, claimed = 1 << 20, 1 << 26
		data := writeParquetColumn(t, arrow.BinaryTypes.String, n, sameStrings(""),
			parquet.WithDictionaryDefault(false), parquet.WithEncoding(parquet.Encodings.DeltaLengthByteArray))
		// The page header's num_values (field 1 of field 5), and the
		// count of lengths of the page: 2^26 zeros in one miniblock.
		replaceOnce(t, data, 4, append([]byte{0x2c, 0x15}, binary.AppendVarint(nil, n)...), append([]byte{0x2c, 0x15}, binary.AppendVarint(nil, claimed)...))
		replaceOnce(t, data, 4, deltaStreamHeader(128, 4, n), deltaStream(claimed, claimed, 0))
		path := filepath.Join(dir, "lengths.parquet")
		checkRefused(t, path, data, "a page in a delta encoding takes 536870913 bytes to decode")
	})
}

// checkRefused writes data to path and reads it: it is refused, with an
// error naming column k of the one row group and ending with want and the
// limit, having allocated less than memLimit of its size.
func checkRefused(t *testing.T, path string, data []byte, want string) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	limit := memLimit(int64(len(data)))
	alloc, err := readAllocating(path)
	t.Logf("%d bytes, %d allocated: %v", len(data), alloc, err)
	if alloc > uint64(limit) {
		t.Errorf("%d bytes allocated, limit %d", alloc, limit)
	}
	prefix := path + `: corrupt Parquet page in column "k" of row group 1 of 1 (rows 1-`
	suffix := fmt.Sprintf("%s, more than the %d bytes a file of its size may decode to", want, limit)
	if err == nil || !strings.HasPrefix(err.Error(), prefix) || !strings.HasSuffix(err.Error(), suffix) {
		t.Errorf("err  = %v\nwant %s...%s", err, prefix, suffix)
	}
}

// TestParquetCompressedRows reads files of 4,000,000 rows of a few bytes
// each, tiny for the rows they hold: a run of one value (RLE dictionary
// indexes), integers counting up (DELTA_BINARY_PACKED), and empty and
// repeated strings (DELTA_LENGTH_BYTE_ARRAY, DELTA_BYTE_ARRAY, whose
// pages of 1,000,000 values take 4 and 8 bytes a value to decode): every
// row reads.
func TestParquetCompressedRows(t *testing.T) {
	const n = 4_000_000
	noDict := parquet.WithDictionaryDefault(false)
	for _, tc := range []struct {
		name string
		dt   arrow.DataType
		fill func(b array.Builder, start, count int)
		opts []parquet.WriterProperty
		want func(i int) string
	}{
		{"rle", arrow.PrimitiveTypes.Int64, func(b array.Builder, _, count int) {
			for range count {
				b.(*array.Int64Builder).Append(42)
			}
		}, nil, func(int) string { return "42" }},
		{"delta", arrow.PrimitiveTypes.Int64, deltaInts,
			[]parquet.WriterProperty{noDict, parquet.WithEncoding(parquet.Encodings.DeltaBinaryPacked)}, func(i int) string { return fmt.Sprint(i) }},
		{"delta_length", arrow.BinaryTypes.String, sameStrings(""),
			[]parquet.WriterProperty{noDict, parquet.WithEncoding(parquet.Encodings.DeltaLengthByteArray)}, func(int) string { return "" }},
		{"delta_bytes", arrow.BinaryTypes.String, sameStrings("abc"),
			[]parquet.WriterProperty{noDict, parquet.WithEncoding(parquet.Encodings.DeltaByteArray)}, func(int) string { return "abc" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := writeParquetColumn(t, tc.dt, n, tc.fill, tc.opts...)
			readParquetRows(t, filepath.Join(t.TempDir(), tc.name+".parquet"), data, n, func(i int, fields [][]byte) {
				if i%99_991 == 0 || i == n-1 {
					if got := string(fields[0]); got != tc.want(i) {
						t.Fatalf("row %d: %q, want %q", i+1, got, tc.want(i))
					}
				}
			})
			t.Logf("%d bytes", len(data))
		})
	}
}

// TestParquetDeltaNeed: the bytes a page of DELTA_BYTE_ARRAY takes to
// decode count the prefix lengths and the suffix lengths, whose header
// follows the prefix lengths' blocks: for 1,000 values in blocks of 128
// in 4 miniblocks, 4 bytes a value and 4 a value of a miniblock, and the
// 4 bit widths, twice.
func TestParquetDeltaNeed(t *testing.T) {
	const n = 1000
	data := writeParquetColumn(t, arrow.BinaryTypes.String, n, func(b array.Builder, start, count int) {
		for i := range count {
			b.(*array.StringBuilder).Append(fmt.Sprintf("key%07d", (start+i)*7))
		}
	}, parquet.WithDictionaryDefault(false), parquet.WithEncoding(parquet.Encodings.DeltaByteArray))
	pf, err := file.NewParquetReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	const need = 2 * (4*n + 4*32 + 4)
	for _, tc := range []struct {
		limit int64
		err   bool
	}{{need, false}, {need - 1, true}} {
		err := checkParquetPages(bytes.NewReader(data), int64(len(data)), pf.MetaData(), tc.limit)
		var pe *pageCheckError
		if (err != nil) != tc.err || err != nil && (!errors.As(err, &pe) || pe.rg != 0 || pe.col != 0 ||
			!strings.HasPrefix(err.Error(), fmt.Sprintf("a page in a delta encoding takes %d bytes to decode", need))) {
			t.Errorf("limit %d: %v", tc.limit, err)
		}
	}
}

// TestParquetPageHeaderType: the data page header a page's check reads
// is the one of the page's type, as arrow-go reads it, when a header has
// both: a V1 page whose V2 header says PLAIN is still in its V1 header's
// DELTA_BINARY_PACKED.
func TestParquetPageHeaderType(t *testing.T) {
	for _, tc := range []struct {
		typ      byte // zigzag
		encoding int64
	}{{0x00, encDeltaBinary}, {0x06, 0}} {
		header := []byte{
			0x15, tc.typ, 0x15, 0xc8, 0x01, 0x15, 0xc8, 0x01, // type, sizes 100
			0x2c, 0x15, 0x14, 0x15, 0x0a, 0x00, // V1: 10 values, DELTA_BINARY_PACKED
			0x3c, 0x15, 0x14, 0x35, 0x00, 0x00, // V2: 10 values, PLAIN
			0x00,
		}
		h, n, err := decodePageHeader(header)
		if err != nil || n != len(header) || h.compressed != 100 || h.values != 10 || h.encoding != tc.encoding {
			t.Errorf("type %d: %+v, %d bytes read: %v", tc.typ/2, h, n, err)
		}
	}
}

// TestParquetPageHeaderLong: a page header that goes on past the first
// bytes the check reads of it (a binary field of 20 KiB) reads as
// arrow-go reads it, from more bytes, to its end; one cut short, or one
// longer than arrow-go reads, does not read.
func TestParquetPageHeaderLong(t *testing.T) {
	field := func(size int) []byte { // field 15, a binary of size bytes
		return append(binary.AppendUvarint([]byte{0xa8}, uint64(size)), make([]byte, size)...)
	}
	header := pageHeaderBytes(100, 10, 0, 0x00, 0x00, field(20<<10))
	var bufs pageBuffers
	h, n, ok := readPageHeader(bytes.NewReader(header), 0, int64(len(header)), &bufs)
	if !ok || n != int64(len(header)) || h.values != 10 || h.encoding != encDeltaBinary {
		t.Errorf("%d bytes: %+v, %d bytes read, %v", len(header), h, n, ok)
	}
	cut := header[:len(header)-1]
	if _, _, ok := readPageHeader(bytes.NewReader(cut), 0, int64(len(cut)), &bufs); ok {
		t.Errorf("header cut short read")
	}
	header = pageHeaderBytes(100, 10, 0, 0x00, 0x00, field(pageHeaderMaxRead))
	if _, _, ok := readPageHeader(bytes.NewReader(header), 0, int64(len(header)), &bufs); ok {
		t.Errorf("header of %d bytes read", len(header))
	}
}

// TestParquetDeltaHeaderVarints: the varints of a DELTA_BINARY_PACKED
// header read as arrow-go reads them (binary.ReadUvarint): a first value
// of 10 bytes whose last has bits past the 64th does not read, as
// arrow-go refuses it before it allocates; one of 64 bits does.
func TestParquetDeltaHeaderVarints(t *testing.T) {
	for _, tc := range []struct {
		last byte
		ok   bool
	}{{0x01, true}, {0x02, false}, {0x7f, false}} {
		header := []byte{0x80, 0x01, 0x04, 0x0a} // 128 values a block, 4 miniblocks, 10 values
		header = append(header, bytes.Repeat([]byte{0xff}, 9)...)
		header = append(header, tc.last)
		_, refused := binary.ReadUvarint(bytes.NewReader(header[4:]))
		d, n, ok := readDeltaHeader(header)
		if ok != tc.ok || (refused == nil) != tc.ok || ok && (n != len(header) || d.total != 10) {
			t.Errorf("last byte %#x: %+v, %d bytes, %v; arrow-go's varint: %v", tc.last, d, n, ok, refused)
		}
	}
}

// readParquetRows writes data to path and reads it through source.Open:
// every row reads, check sees each (its index and fields), and there are
// rows of them.
func readParquetRows(t *testing.T, path string, data []byte, rows int, check func(i int, fields [][]byte)) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := source.Open(path, source.Options{})
	if err != nil {
		t.Fatal(err)
	}
	readRows(t, r, rows, check)
}

// readRows reads r to its end and closes it: every row reads, check sees
// each (its index and fields), and there are rows of them.
func readRows(t *testing.T, r source.Reader, rows int, check func(i int, fields [][]byte)) {
	t.Helper()
	defer r.Close()
	for i := 0; ; i++ {
		fields, err := r.Next()
		if errors.Is(err, io.EOF) {
			if i != rows {
				t.Errorf("%d rows, want %d", i, rows)
			}
			return
		}
		if err != nil {
			t.Fatalf("row %d: %v", i+1, err)
		}
		check(i, fields)
	}
}
