package columnar

import (
	"bytes"
	"encoding/binary"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
)

// zigzag32 is the zigzag varint of an i32 v, with the bits above 32 of
// the varint set to high.
func zigzag32(v int32, high uint64) []byte {
	return binary.AppendUvarint(nil, uint64(uint32(v<<1^v>>31))|high<<32)
}

// pageHeaderBytes is a PageHeader of a DATA_PAGE of size bytes, whose
// DataPageHeader holds values values in DELTA_BINARY_PACKED: the encoding
// and the page type have the bits above 32 high of their varints set,
// the DataPageHeader ends with the byte stop1 and the PageHeader with
// stop (a stop, type 0, whatever their high bits), and extra goes after
// the DataPageHeader, before the stop.
func pageHeaderBytes(size, values int32, high uint64, stop1, stop byte, extra []byte) []byte {
	h := []byte{0x15}
	h = append(h, zigzag32(pageData, high)...)
	h = append(h, 0x15)
	h = append(h, zigzag32(size, 0)...)
	h = append(h, 0x15)
	h = append(h, zigzag32(size, 0)...)
	h = append(h, 0x2c, 0x15) // data_page_header, num_values
	h = append(h, zigzag32(values, 0)...)
	h = append(h, 0x15)
	h = append(h, zigzag32(encDeltaBinary, high)...)
	h = append(h, 0x15, 0x06, 0x15, 0x06, stop1) // RLE levels
	h = append(h, extra...)
	return append(h, stop)
}

// TestParquetPageHeaderEncodings: a page header that the Thrift library
// arrow-go reads with reads as a delta page is one to the check too,
// however it is encoded: a stop byte with the high bits of a field id
// delta, i32 varints with bits above 32 (the library keeps the low 32),
// a field of type UUID, a binary whose size has bits above 32, values
// nested 40 deep, and an INDEX_PAGE header before it (arrow-go reads the
// next header right after one). The check stopped at each and arrow-go
// made a miniblock of 2^26 values, 512 MB for a file of 400 bytes.
func TestParquetPageHeaderEncodings(t *testing.T) {
	const rows = 200
	base := writeParquetColumn(t, arrow.PrimitiveTypes.Int64, rows, deltaInts,
		parquet.WithDictionaryDefault(false), parquet.WithEncoding(parquet.Encodings.DeltaBinaryPacked))
	pf, err := file.NewParquetReader(bytes.NewReader(base))
	if err != nil {
		t.Fatal(err)
	}
	chunk, err := pf.MetaData().RowGroup(0).ColumnChunk(0)
	if err != nil {
		t.Fatal(err)
	}
	start, length := int(chunk.DataPageOffset()), int(chunk.TotalCompressedSize())
	// page is a data page of header, and a body that fills the column
	// chunk but for the bytes of before: a delta stream of the rows in a
	// miniblock of 2^26 values.
	page := func(before []byte, header func(size int32) []byte) []byte {
		size := int32(length - len(before))
		for range 3 {
			size = int32(length-len(before)) - int32(len(header(size)))
		}
		body := make([]byte, size)
		copy(body, deltaStream(1<<26, rows, 1))
		return append(header(size), body...)
	}
	uuid := append([]byte{0xad}, make([]byte, 16)...)                   // field 15, UUID
	long := append([]byte{0xa8}, binary.AppendUvarint(nil, 1<<32|3)...) // field 15, binary of 3
	long = append(long, "abc"...)
	nested := append([]byte{0xa9}, bytes.Repeat([]byte{0x19}, 39)...) // field 15, lists of one list
	nested = append(nested, 0x09)
	index := func(size int32) []byte { // an INDEX_PAGE of size bytes
		return append(append([]byte{0x15, 0x02, 0x15, 0x00, 0x15}, zigzag32(size, 0)...), 0x00)
	}
	indexLen := len(index(int32(length)))
	dir := t.TempDir()
	for _, tc := range []struct {
		name   string
		before []byte
		header func(size int32) []byte
	}{
		{"plain", nil, func(size int32) []byte { return pageHeaderBytes(size, rows, 0, 0x00, 0x00, nil) }},
		{"stop_delta", nil, func(size int32) []byte { return pageHeaderBytes(size, rows, 0, 0xf0, 0x10, nil) }},
		{"i32_high_bits", nil, func(size int32) []byte { return pageHeaderBytes(size, rows, 0x15, 0x00, 0x00, nil) }},
		{"uuid", nil, func(size int32) []byte { return pageHeaderBytes(size, rows, 0, 0x00, 0x00, uuid) }},
		{"binary_size_high_bits", nil, func(size int32) []byte { return pageHeaderBytes(size, rows, 0, 0x00, 0x00, long) }},
		{"nested_40", nil, func(size int32) []byte { return pageHeaderBytes(size, rows, 0, 0x00, 0x00, nested) }},
		{"index_page_before", index(int32(length - indexLen)), func(size int32) []byte { return pageHeaderBytes(size, rows, 0, 0x00, 0x00, nil) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := bytes.Clone(base)
			chunkBytes := append(bytes.Clone(tc.before), page(tc.before, tc.header)...)
			if len(chunkBytes) != length {
				t.Fatalf("column chunk of %d bytes, want %d", len(chunkBytes), length)
			}
			copy(data[start:], chunkBytes)
			checkRefused(t, filepath.Join(dir, tc.name+".parquet"), data, "a page in a delta encoding takes 536870913 bytes to decode")
		})
	}
}
