package columnar

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/schema"
	"github.com/apache/thrift/lib/go/thrift"
)

// Parquet page types and encodings, as a page header gives them.
const (
	pageData       = 0
	pageDictionary = 2
	pageDataV2     = 3
	encRLE         = 3
	encBitPacked   = 4
	encDeltaBinary = 5 // DELTA_BINARY_PACKED
	encDeltaLength = 6 // DELTA_LENGTH_BYTE_ARRAY
	encDeltaBytes  = 7 // DELTA_BYTE_ARRAY
)

// Where the page reader of arrow-go reads a page header: it starts with
// the first bytes, and reads more up to a limit when the header goes on
// past them.
const (
	pageHeaderFirstRead = 16 << 10
	pageHeaderMaxRead   = 16 << 20
	// parquet816Padding is what arrow-go reads past a column chunk of a
	// file of an old parquet-mr (PARQUET-816).
	parquet816Padding = 100
)

// pageCheckError is a page that takes more memory to decode than a file
// may decode to: rg and col are the indexes of its row group and of its
// (leaf) column.
type pageCheckError struct {
	rg, col int
	err     error
}

func (e *pageCheckError) Error() string { return e.err.Error() }

// checkParquetPages reads the page headers of each column chunk of a
// Parquet file of size bytes (f), and the delta encoding headers of the
// pages that have them, and returns a *pageCheckError for the first
// column chunk past which the pages of a row group take more than limit
// bytes to decode at once.
//
// arrow-go decodes a page in a delta encoding into Go slices it makes by
// the counts the page gives, whatever the batch it reads: a slice of the
// page's values for DELTA_LENGTH_BYTE_ARRAY and DELTA_BYTE_ARRAY (4 bytes
// a value, and 4 more for the prefixes), and one of a miniblock's values
// for each DELTA_BINARY_PACKED stream (4 or 8 bytes a value). A header of
// a few bytes can ask for 2^32 values of a miniblock, and a page of a few
// bytes for 2^31 lengths: tens of GB, which is a fatal error of the Go
// runtime, not a panic. The columns of a row group are read together, so
// their pages are held at once: the largest page of each column chunk
// counts, and the row group must fit limit. An encoder of 128-value
// blocks (the format's default) writes at least 5 bytes for each 128
// values, so the pages of a file it writes take at most about 100 times
// their size to decode, less than memLimit.
//
// A header or encoding that does not read is left to arrow-go, which
// reports it when it reads the page; so is what arrow-go would refuse
// before it allocates (a page larger than its limits).
func checkParquetPages(f io.ReaderAt, size int64, md *metadata.FileMetaData, limit int64) error {
	old := md.WriterVersion().LessThan(metadata.Parquet816FixedVersion)
	var bufs pageBuffers
	for rg := range md.NumRowGroups() {
		rgm := md.RowGroup(rg)
		var held int64
		for col := range rgm.NumColumns() {
			chunk, err := rgm.ColumnChunk(col)
			if err != nil {
				continue
			}
			if start, length := chunkSpan(chunk); start < 0 || length < 0 || start > size || length > size-start {
				// arrow-go makes slices of these sizes, in goroutines of
				// its own for the children of a struct: a panic there
				// ends the process.
				return &pageCheckError{rg: rg, col: col, err: fmt.Errorf("its column chunk of %d bytes at offset %d is not within the file's %d bytes", length, start, size)}
			}
			need := chunkDecodeNeed(f, size, old, chunk, md.Schema.Column(col), limit, &bufs)
			held += need
			if held > limit {
				if need == held {
					err = fmt.Errorf("a page in a delta encoding takes %d bytes to decode, more than the %d bytes a file of its size may decode to", need, limit)
				} else {
					err = fmt.Errorf("a page in a delta encoding takes %d bytes to decode, %d with the pages of the columns before it, more than the %d bytes a file of its size may decode to", need, held, limit)
				}
				return &pageCheckError{rg: rg, col: col, err: err}
			}
		}
	}
	return nil
}

// chunkSpan is where a column chunk starts in its file, at its dictionary
// page or its first data page, as arrow-go reads it, and its length.
func chunkSpan(chunk *metadata.ColumnChunkMetaData) (start, length int64) {
	start = chunk.DataPageOffset()
	if chunk.HasDictionaryPage() && chunk.DictionaryPageOffset() > 0 && start > chunk.DictionaryPageOffset() {
		start = chunk.DictionaryPageOffset()
	}
	return start, chunk.TotalCompressedSize()
}

// chunkDecodeNeed is the most bytes that a page of a column chunk takes
// to decode (deltaDecodeNeed), reading the pages that arrow-go reads: from
// the chunk's first page, within its compressed size (and the padding of
// PARQUET-816 for an old writer), until they hold its values.
func chunkDecodeNeed(f io.ReaderAt, size int64, old bool, chunk *metadata.ColumnChunkMetaData, col *schema.Column, limit int64, bufs *pageBuffers) int64 {
	start, length := chunkSpan(chunk)
	if start < 0 || length < 0 || start > size || length > size-start {
		return 0
	}
	end := start + length
	if old {
		end += min(parquet816Padding, size-end)
	}
	var need, values int64
	for pos := start; pos < end && values < chunk.NumValues(); {
		h, n, ok := readPageHeader(f, pos, end, bufs)
		if !ok || h.compressed < 0 || h.uncompressed < 0 || h.uncompressed > limit {
			break
		}
		pos += n
		switch h.typ {
		case pageData, pageDictionary, pageDataV2:
			if h.compressed > end-pos {
				return need
			}
		default:
			// arrow-go skips the header of a page of another type, and
			// reads the next page header right after it: the page's
			// body, if it says it has one.
			continue
		}
		switch h.typ {
		case pageData:
			values += h.values
		case pageDataV2:
			values += h.rows
		}
		if (h.typ == pageData || h.typ == pageDataV2) && h.encoding >= encDeltaBinary && h.encoding <= encDeltaBytes {
			need = max(need, deltaDecodeNeed(f, pos, h, chunk.Compression(), col, bufs))
		}
		pos += h.compressed
	}
	return need
}

// pageBuffers are the buffers checkParquetPages reads into, kept from
// one page to the next.
type pageBuffers struct {
	header, body, data []byte
}

// grow returns b with length n, reusing its array when it has room.
func grow(b []byte, n int64) []byte {
	if int64(cap(b)) < n {
		return make([]byte, n)
	}
	return b[:n]
}

// pageHeader is what chunkDecodeNeed reads of a Parquet page header: the
// data page header is the one of its type, as arrow-go reads it.
type pageHeader struct {
	typ                      int64
	uncompressed, compressed int64
	dataPageHeader
}

// dataPageHeader is what chunkDecodeNeed reads of a DataPageHeader or a
// DataPageHeaderV2.
type dataPageHeader struct {
	values, rows, encoding   int64
	defEncoding, repEncoding int64
	defLen, repLen           int64
	notCompressed            bool // a V2 page whose values are not compressed
}

// readPageHeader reads the header of the page at offset pos of f (before
// offset end), and returns it and its length.
func readPageHeader(f io.ReaderAt, pos, end int64, bufs *pageBuffers) (h pageHeader, n int64, ok bool) {
	for want := int64(pageHeaderFirstRead); ; want *= 2 {
		bufs.header = grow(bufs.header, min(want, end-pos))
		buf := bufs.header
		m, err := f.ReadAt(buf, pos)
		if err != nil && !errors.Is(err, io.EOF) {
			return h, 0, false
		}
		var k int
		h, k, err = decodePageHeader(buf[:m])
		if err == nil {
			return h, int64(k), true
		}
		short := errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
		if !short || int64(m) < want || want >= pageHeaderMaxRead {
			return h, 0, false
		}
	}
}

// pageHeaderConf is the configuration of the Thrift protocol arrow-go
// reads page headers with: the Thrift library's defaults.
var pageHeaderConf = &thrift.TConfiguration{}

// decodePageHeader reads the PageHeader structure of parquet.thrift at
// the start of b with the Thrift compact protocol, as arrow-go reads it,
// so that the pages checked are the pages arrow-go decodes; it returns
// the header and its length. A header that goes on past b is an error
// that wraps io.EOF or io.ErrUnexpectedEOF.
func decodePageHeader(b []byte) (pageHeader, int, error) {
	buf := &thrift.TMemoryBuffer{Buffer: bytes.NewBuffer(b)}
	h, err := parsePageHeader(context.Background(), thrift.NewTCompactProtocolConf(buf, pageHeaderConf))
	return h, len(b) - int(buf.RemainingBytes()), err
}

// parsePageHeader reads a PageHeader structure: the fields of arrow-go's
// PageHeader.Read, with the same calls, and skips the others as it does.
func parsePageHeader(ctx context.Context, p thrift.TProtocol) (pageHeader, error) {
	var h pageHeader
	var v1, v2 dataPageHeader
	err := readStruct(ctx, p, func(id int16, typ thrift.TType) (err error) {
		switch {
		case id == 1 && typ == thrift.I32:
			h.typ, err = readI32(ctx, p)
		case id == 2 && typ == thrift.I32:
			h.uncompressed, err = readI32(ctx, p)
		case id == 3 && typ == thrift.I32:
			h.compressed, err = readI32(ctx, p)
		case id == 5 && typ == thrift.STRUCT:
			v1, err = parseDataPageHeader(ctx, p, false)
		case id == 8 && typ == thrift.STRUCT:
			v2, err = parseDataPageHeader(ctx, p, true)
		case (id == 6 || id == 7) && typ == thrift.STRUCT:
			// An IndexPageHeader or a DictionaryPageHeader: arrow-go
			// reads its fields, and skips those it does not know.
			err = skipFields(ctx, p)
		default:
			err = p.Skip(ctx, typ)
		}
		return err
	})
	switch h.typ {
	case pageData:
		h.dataPageHeader = v1
	case pageDataV2:
		h.dataPageHeader = v2
	}
	return h, err
}

// parseDataPageHeader reads a DataPageHeader structure, or a
// DataPageHeaderV2 (v2).
func parseDataPageHeader(ctx context.Context, p thrift.TProtocol, v2 bool) (dataPageHeader, error) {
	var h dataPageHeader
	err := readStruct(ctx, p, func(id int16, typ thrift.TType) (err error) {
		var v *int64
		switch {
		case id == 1:
			v = &h.values
		case v2 && id == 3:
			v = &h.rows
		case !v2 && id == 2, v2 && id == 4:
			v = &h.encoding
		case !v2 && id == 3:
			v = &h.defEncoding
		case !v2 && id == 4:
			v = &h.repEncoding
		case v2 && id == 5:
			v = &h.defLen
		case v2 && id == 6:
			v = &h.repLen
		case v2 && id == 7 && typ == thrift.BOOL:
			compressed, err := p.ReadBool(ctx)
			h.notCompressed = !compressed
			return err
		}
		switch {
		case v != nil && typ == thrift.I32:
			*v, err = readI32(ctx, p)
		case (!v2 && id == 5 || v2 && id == 8) && typ == thrift.STRUCT:
			// Statistics: arrow-go reads its fields, and skips those
			// it does not know.
			err = skipFields(ctx, p)
		default:
			err = p.Skip(ctx, typ)
		}
		return err
	})
	return h, err
}

// readStruct reads a structure as arrow-go's generated code reads one:
// field reads the value of each field, of its id and type, up to the
// structure's stop.
func readStruct(ctx context.Context, p thrift.TProtocol, field func(id int16, typ thrift.TType) error) error {
	if _, err := p.ReadStructBegin(ctx); err != nil {
		return err
	}
	for {
		_, typ, id, err := p.ReadFieldBegin(ctx)
		if err != nil {
			return err
		}
		if typ == thrift.STOP {
			break
		}
		if err := field(id, typ); err != nil {
			return err
		}
		if err := p.ReadFieldEnd(ctx); err != nil {
			return err
		}
	}
	return p.ReadStructEnd(ctx)
}

// skipFields reads past a structure, skipping the value of each of its
// fields as a structure arrow-go reads skips the fields it does not know:
// each as deep as the Thrift library skips, one level deeper than
// skipping the structure itself would.
func skipFields(ctx context.Context, p thrift.TProtocol) error {
	return readStruct(ctx, p, func(_ int16, typ thrift.TType) error {
		return p.Skip(ctx, typ)
	})
}

// readI32 reads an i32 value.
func readI32(ctx context.Context, p thrift.TProtocol) (int64, error) {
	v, err := p.ReadI32(ctx)
	return int64(v), err
}

// deltaDecodeNeed is the bytes that the Go slices arrow-go makes to
// decode the page of header h at offset pos of f take: a miniblock's
// values of each DELTA_BINARY_PACKED stream, and the lengths (and the
// prefix lengths) of DELTA_LENGTH_BYTE_ARRAY (DELTA_BYTE_ARRAY). It is 0
// for a page that does not read.
func deltaDecodeNeed(f io.ReaderAt, pos int64, h pageHeader, codec compress.Compression, col *schema.Column, bufs *pageBuffers) (need int64) {
	defer func() {
		if recover() != nil { // a decompressor's, on damaged data
			need = 0
		}
	}()
	bufs.body = grow(bufs.body, h.compressed)
	body := bufs.body
	if _, err := f.ReadAt(body, pos); err != nil {
		return 0
	}
	var values []byte
	switch h.typ {
	case pageData:
		data, ok := decompressPage(body, h.uncompressed, codec, bufs)
		if !ok {
			return 0
		}
		if values, ok = skipLevelsV1(data, h, col); !ok {
			return 0
		}
	case pageDataV2:
		levels := h.defLen + h.repLen
		if h.defLen < 0 || h.repLen < 0 || levels > int64(len(body)) {
			return 0
		}
		values = body[levels:]
		if !h.notCompressed {
			var ok bool
			if values, ok = decompressPage(values, h.uncompressed-levels, codec, bufs); !ok {
				return 0
			}
		}
	}
	switch h.encoding {
	case encDeltaBinary:
		d, _, ok := readDeltaHeader(values)
		if !ok {
			return 0
		}
		width := int64(8)
		if col.PhysicalType() == parquet.Types.Int32 {
			width = 4
		}
		return d.need(width)
	case encDeltaLength:
		d, _, ok := readDeltaHeader(values)
		if !ok {
			return 0
		}
		return 4*int64(d.total) + d.need(4)
	case encDeltaBytes:
		prefixes, n, ok := readDeltaHeader(values)
		if !ok {
			return 0
		}
		// arrow-go makes the prefix lengths' slices before it finds
		// whether the suffixes read.
		need = 4*int64(prefixes.total) + prefixes.need(4)
		end, ok := prefixes.skip(values, n)
		if !ok {
			return need
		}
		suffixes, _, ok := readDeltaHeader(values[end:])
		if !ok {
			return need
		}
		return need + 4*int64(suffixes.total) + suffixes.need(4)
	}
	return 0
}

// decompressPage decompresses the body of a page to its uncompressed
// size.
func decompressPage(body []byte, uncompressed int64, codec compress.Compression, bufs *pageBuffers) ([]byte, bool) {
	if codec == compress.Codecs.Uncompressed {
		return body, true
	}
	c, err := compress.GetCodec(codec)
	if err != nil || uncompressed < 0 {
		return nil, false
	}
	bufs.data = grow(bufs.data, uncompressed)
	return c.Decode(bufs.data, body), true
}

// skipLevelsV1 is the values of the data of a V1 data page: what follows
// its repetition and definition levels.
func skipLevelsV1(data []byte, h pageHeader, col *schema.Column) ([]byte, bool) {
	skip := func(enc int64, maxLevel int16) bool {
		if maxLevel <= 0 {
			return true
		}
		var n uint64
		switch enc {
		case encRLE:
			if len(data) < 4 {
				return false
			}
			n = 4 + uint64(binary.LittleEndian.Uint32(data))
		case encBitPacked:
			n = (uint64(h.values)*uint64(bits.Len16(uint16(maxLevel))) + 7) / 8
		default:
			return false
		}
		if h.values < 0 || n > uint64(len(data)) {
			return false
		}
		data = data[n:]
		return true
	}
	ok := skip(h.repEncoding, col.MaxRepetitionLevel()) && skip(h.defEncoding, col.MaxDefinitionLevel())
	return data, ok
}

// deltaHeader is the header of a DELTA_BINARY_PACKED stream.
type deltaHeader struct {
	blockSize, miniblocks, total uint64
}

// readDeltaHeader reads the header of a DELTA_BINARY_PACKED stream at the
// start of b, and returns it and its length; not ok when arrow-go refuses
// it before it allocates. Its varints read as arrow-go reads them, with
// binary.ReadUvarint.
func readDeltaHeader(b []byte) (d deltaHeader, n int, ok bool) {
	var v [4]uint64 // the block size, the miniblocks, the total and the first value
	for i := range v {
		x, m := binary.Uvarint(b[n:])
		if m <= 0 {
			return d, 0, false
		}
		v[i] = x
		n += m
	}
	d.blockSize, d.miniblocks, d.total = v[0], v[1], v[2]
	if d.blockSize == 0 || d.blockSize > math.MaxUint32 || d.blockSize%128 != 0 ||
		d.miniblocks == 0 || d.blockSize%d.miniblocks != 0 || (d.blockSize/d.miniblocks)%32 != 0 ||
		d.total > math.MaxUint32 {
		return d, 0, false
	}
	return d, n, true
}

// need is the bytes arrow-go makes for a miniblock's values of width
// bytes, and the bit widths of a block.
func (d deltaHeader) need(width int64) int64 {
	return width*int64(d.blockSize/d.miniblocks) + int64(d.miniblocks)
}

// skip returns the offset in b of the end of the stream of header d
// whose blocks start at offset pos: where arrow-go stops reading when it
// has decoded d.total values (32-bit ones).
func (d deltaHeader) skip(b []byte, pos int) (int, bool) {
	perMini := d.blockSize / d.miniblocks
	for left := max(d.total, 1) - 1; left > 0; {
		_, n := binary.Uvarint(b[pos:]) // the minimum delta
		if n <= 0 || d.miniblocks > uint64(len(b)-pos-n) {
			return 0, false
		}
		widths := pos + n
		pos = widths + int(d.miniblocks)
		for m := uint64(0); m < d.miniblocks && left > 0; m++ {
			w := uint64(b[widths+int(m)])
			if w > 32 || w*perMini/8 > uint64(len(b)-pos) {
				return 0, false
			}
			pos += int(w * perMini / 8)
			left -= min(left, perMini)
		}
	}
	return pos, true
}
