package columnar

import (
	"github.com/lutkit/lutkit/compile/source"

	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// readAllocating opens the source at path and reads it to its end, and
// returns the bytes the reading allocated and the error that ended it
// (io.EOF at the end).
func readAllocating(path string) (uint64, error) {
	alloc, _, err := readAllocatingOpen(path)
	return alloc, err
}

// readAllocatingOpen is readAllocating, which also says whether the error
// came from Open.
func readAllocatingOpen(path string) (alloc uint64, opening bool, err error) {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	r, err := source.Open(path, source.Options{})
	opening = err != nil
	if err == nil {
		for {
			if _, err = r.Next(); err != nil && !source.Skippable(err) {
				break
			}
		}
		r.Close()
	}
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc, opening, err
}

// smallParquet is a Parquet file of 50 rows of two columns, id and name.
func smallParquet(t testing.TB) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := source.NewWriter("parquet", &buf, []string{"id", "name"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		if err := w.Write([][]byte{fmt.Appendf(nil, "%d", i), fmt.Appendf(nil, "n%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// writeArrow writes batches as an Arrow IPC file, or as a stream, with the
// writer options given (compression).
func writeArrow(t testing.TB, schema *arrow.Schema, batches []arrow.RecordBatch, stream bool, opts ...ipc.Option) []byte {
	t.Helper()
	var buf bytes.Buffer
	opts = append(opts, ipc.WithSchema(schema))
	var w interface {
		Write(arrow.RecordBatch) error
		Close() error
	}
	if stream {
		w = ipc.NewWriter(&buf, opts...)
	} else {
		fw, err := ipc.NewFileWriter(&buf, opts...)
		if err != nil {
			t.Fatal(err)
		}
		w = fw
	}
	for _, b := range batches {
		if err := w.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// countsBatch builds a batch whose metadata has each count checkMessage
// checks: the custom metadata of the schema, of a field and of the
// batch, a field with a child, and a string view column with a variadic
// data buffer.
func countsBatch(t testing.TB) (*arrow.Schema, []arrow.RecordBatch) {
	t.Helper()
	mem := memory.DefaultAllocator
	meta := arrow.NewMetadata([]string{"by"}, []string{"test"})
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.PrimitiveTypes.Int64, Metadata: arrow.NewMetadata([]string{"unit"}, []string{"none"})},
		{Name: "l", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64)},
		{Name: "v", Type: arrow.BinaryTypes.StringView},
	}, &meta)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for i := range 2 {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		lb := b.Field(1).(*array.ListBuilder)
		lb.Append(true)
		lb.ValueBuilder().(*array.Int64Builder).Append(int64(i))
		b.Field(2).(*array.StringViewBuilder).Append(fmt.Sprintf("a value longer than twelve bytes, %d", i))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	cols := make([]arrow.Array, rec.NumCols())
	for i := range cols {
		cols[i] = rec.Column(i)
	}
	return schema, []arrow.RecordBatch{array.NewRecordBatchWithMetadata(schema, cols, rec.NumRows(), arrow.NewMetadata([]string{"batch"}, []string{"1"}))}
}

// ipcMessage is where an encapsulated IPC message lies in a file or a
// stream: start is the offset of its continuation marker, meta that of
// its flatbuffer metadata, body that of its body.
type ipcMessage struct {
	start, meta, body int
	typ               ipc.MessageType
}

// listMessages lists the messages of data from offset pos (0 for a
// stream, 8 for a file) up to the end-of-stream marker.
func listMessages(t testing.TB, data []byte, pos int) []ipcMessage {
	t.Helper()
	var msgs []ipcMessage
	for pos+8 <= len(data) && binary.LittleEndian.Uint32(data[pos:]) == 0xffffffff {
		metaLen := int(binary.LittleEndian.Uint32(data[pos+4:]))
		if metaLen == 0 {
			break
		}
		mr := ipc.NewMessageReader(bytes.NewReader(data[pos:]))
		msg, err := mr.Message()
		if err != nil {
			t.Fatalf("message at %d: %v", pos, err)
		}
		m := ipcMessage{start: pos, meta: pos + 8, body: pos + 8 + metaLen, typ: msg.Type()}
		pos = m.body + int(msg.BodyLen())
		mr.Release()
		msgs = append(msgs, m)
	}
	return msgs
}

// firstBatch is the first record batch message of an Arrow file or
// stream.
func firstBatch(t testing.TB, data []byte, stream bool) ipcMessage {
	t.Helper()
	pos := 8
	if stream {
		pos = 0
	}
	for _, m := range listMessages(t, data, pos) {
		if m.typ == ipc.MessageRecordBatch {
			return m
		}
	}
	t.Fatal("no record batch")
	return ipcMessage{}
}

// fbRoot is the root table of the flatbuffer at data[start:]; writes to
// its bytes are writes to data.
func fbRoot(data []byte, start int) fbTable {
	b := data[start:]
	return fbTable{b, int(binary.LittleEndian.Uint32(b))}
}

// sub is the table the field at slot of t refers to.
func sub(t testing.TB, tab fbTable, slot int) fbTable {
	t.Helper()
	s, ok := tab.table(slot)
	if !ok {
		t.Fatalf("no table at slot %d", slot)
	}
	return s
}

// countOf is the length of the vector at slot of t.
func countOf(t testing.TB, tab fbTable, slot int) []byte {
	t.Helper()
	f := tab.field(slot)
	if f == 0 {
		t.Fatalf("no vector at slot %d", slot)
	}
	return tab.b[f+int(binary.LittleEndian.Uint32(tab.b[f:])):]
}

// elemOf is element i, of size bytes, of the vector at slot of t.
func elemOf(t testing.TB, tab fbTable, slot, i, size int) []byte {
	t.Helper()
	start, n, err := tab.vector(slot, size)
	if err != nil || i >= n {
		t.Fatalf("vector at slot %d: %d elements, %v", slot, n, err)
	}
	return tab.b[start+i*size:]
}

// footerStart is the offset of the footer flatbuffer of an Arrow file.
func footerStart(data []byte) int {
	return len(data) - 10 - int(binary.LittleEndian.Uint32(data[len(data)-10:]))
}

// Slots of Arrow flatbuffer tables the reader does not look at.
const (
	batchLength = 0
	batchNodes  = 1
)

// The lengths, and the counts, that the damages set: past the limit of
// the files damaged, but within what a machine can allocate (a count of
// fields times the size of a field).
const (
	bigLength = 1 << 28
	bigCount  = 1 << 22
)

// arrowDamage sets a length or a count of an Arrow file or stream.
type arrowDamage struct {
	name   string
	stream bool
	counts bool   // damages countsBatch, not testBatches
	codec  string // "", "lz4" or "zstd": the compression of the good file
	// readable: the damage is in a part the reader does not read (the
	// schema message that starts a file, which its footer repeats).
	readable bool
	set      func(t testing.TB, data []byte)
}

// arrowDamages are the damages to a length or a count, each of a file
// and of a stream when both have it.
func arrowDamages() []arrowDamage {
	var ds []arrowDamage
	for _, stream := range []bool{false, true} {
		kind := "file"
		schemaMsg := 16 // the metadata of the schema message
		if stream {
			kind, schemaMsg = "stream", 8
		}
		add := func(d arrowDamage) {
			d.name = kind + " " + d.name
			d.stream = stream
			ds = append(ds, d)
		}
		batch := func(t testing.TB, data []byte) (ipcMessage, fbTable) {
			m := firstBatch(t, data, stream)
			return m, fbRoot(data, m.meta)
		}
		if !stream {
			add(arrowDamage{name: "footer length", set: func(t testing.TB, data []byte) {
				binary.LittleEndian.PutUint32(data[len(data)-10:], bigLength)
			}})
			add(arrowDamage{name: "footer block metadata length", set: func(t testing.TB, data []byte) {
				binary.LittleEndian.PutUint32(elemOf(t, fbRoot(data, footerStart(data)), footerRecordBatches, 0, 24)[8:], bigLength)
			}})
			add(arrowDamage{name: "footer block body length", set: func(t testing.TB, data []byte) {
				binary.LittleEndian.PutUint64(elemOf(t, fbRoot(data, footerStart(data)), footerRecordBatches, 0, 24)[16:], bigLength)
			}})
		}
		// The schema of a file is its footer's.
		schema := func(t testing.TB, data []byte) fbTable {
			if stream {
				return sub(t, fbRoot(data, schemaMsg), messageHeader)
			}
			return sub(t, fbRoot(data, footerStart(data)), footerSchema)
		}
		add(arrowDamage{name: "schema metadata length", readable: !stream, set: func(t testing.TB, data []byte) {
			binary.LittleEndian.PutUint32(data[schemaMsg-4:], bigLength)
		}})
		add(arrowDamage{name: "batch metadata length", set: func(t testing.TB, data []byte) {
			m, _ := batch(t, data)
			binary.LittleEndian.PutUint32(data[m.start+4:], bigLength)
		}})
		add(arrowDamage{name: "batch body length", set: func(t testing.TB, data []byte) {
			_, msg := batch(t, data)
			binary.LittleEndian.PutUint64(msg.b[msg.field(messageBodyLength):], bigLength)
		}})
		add(arrowDamage{name: "batch row count", set: func(t testing.TB, data []byte) {
			_, msg := batch(t, data)
			rb := sub(t, msg, messageHeader)
			binary.LittleEndian.PutUint64(rb.b[rb.field(batchLength):], bigLength)
		}})
		add(arrowDamage{name: "field node length", set: func(t testing.TB, data []byte) {
			_, msg := batch(t, data)
			binary.LittleEndian.PutUint64(elemOf(t, sub(t, msg, messageHeader), batchNodes, 0, 16), bigLength)
		}})
		add(arrowDamage{name: "buffer length", set: func(t testing.TB, data []byte) {
			_, msg := batch(t, data)
			binary.LittleEndian.PutUint64(elemOf(t, sub(t, msg, messageHeader), batchBuffers, 2, 16)[8:], bigLength)
		}})
		for _, codec := range []string{"lz4", "zstd"} {
			add(arrowDamage{name: codec + " uncompressed length", codec: codec, set: func(t testing.TB, data []byte) {
				m, msg := batch(t, data)
				off := int(binary.LittleEndian.Uint64(elemOf(t, sub(t, msg, messageHeader), batchBuffers, 2, 16)))
				binary.LittleEndian.PutUint64(data[m.body+off:], bigLength)
			}})
		}
		// A zstd frame of one segment, its content size (the window) big,
		// holding a raw block of one byte.
		add(arrowDamage{name: "zstd window", codec: "zstd", set: func(t testing.TB, data []byte) {
			m, msg := batch(t, data)
			buf := elemOf(t, sub(t, msg, messageHeader), batchBuffers, 2, 16)
			off, n := int(binary.LittleEndian.Uint64(buf)), int(binary.LittleEndian.Uint64(buf[8:]))
			frame := []byte{0x28, 0xb5, 0x2f, 0xfd, 0xe0, 0, 0, 0, 0, 0, 0, 0, 0, 0x09, 0, 0, 'x'}
			binary.LittleEndian.PutUint64(frame[5:], bigLength)
			if n < 8+len(frame) {
				t.Fatalf("buffer of %d bytes", n)
			}
			copy(data[m.body+off+8:], frame)
		}})
		add(arrowDamage{name: "schema field count", counts: true, set: func(t testing.TB, data []byte) {
			binary.LittleEndian.PutUint32(countOf(t, schema(t, data), schemaFields), bigCount)
		}})
		add(arrowDamage{name: "schema custom metadata count", counts: true, set: func(t testing.TB, data []byte) {
			binary.LittleEndian.PutUint32(countOf(t, schema(t, data), schemaCustomMetadata), bigCount)
		}})
		field := func(t testing.TB, data []byte, i int) fbTable {
			s := schema(t, data)
			start, _, _ := s.vector(schemaFields, 4)
			return s.elem(start, i)
		}
		add(arrowDamage{name: "field custom metadata count", counts: true, set: func(t testing.TB, data []byte) {
			binary.LittleEndian.PutUint32(countOf(t, field(t, data, 0), fieldCustomMetadata), bigCount)
		}})
		add(arrowDamage{name: "field children count", counts: true, set: func(t testing.TB, data []byte) {
			binary.LittleEndian.PutUint32(countOf(t, field(t, data, 1), fieldChildren), bigCount)
		}})
		add(arrowDamage{name: "batch custom metadata count", counts: true, set: func(t testing.TB, data []byte) {
			_, msg := batch(t, data)
			binary.LittleEndian.PutUint32(countOf(t, msg, messageCustomMetadata), bigCount)
		}})
		add(arrowDamage{name: "variadic buffer count", counts: true, set: func(t testing.TB, data []byte) {
			_, msg := batch(t, data)
			binary.LittleEndian.PutUint64(elemOf(t, sub(t, msg, messageHeader), batchVariadicCounts, 0, 8), bigCount)
		}})
		// arrow-go reads a count for each view column, past the end of
		// the counts the batch gives.
		add(arrowDamage{name: "variadic buffer counts missing", counts: true, set: func(t testing.TB, data []byte) {
			_, msg := batch(t, data)
			rb := sub(t, msg, messageHeader)
			binary.LittleEndian.PutUint64(elemOf(t, rb, batchVariadicCounts, 0, 8), bigCount)
			binary.LittleEndian.PutUint32(countOf(t, rb, batchVariadicCounts), 0)
		}})
	}
	return ds
}

// good writes the file or the stream that d damages.
func (d arrowDamage) good(t testing.TB) []byte {
	t.Helper()
	schema, batches, _ := testBatches(t)
	if d.counts {
		schema, batches = countsBatch(t)
	}
	switch d.codec {
	case "lz4":
		return writeArrow(t, schema, batches, d.stream, ipc.WithLZ4())
	case "zstd":
		return writeArrow(t, schema, batches, d.stream, ipc.WithZstd())
	}
	return writeArrow(t, schema, batches, d.stream)
}

// TestArrowDamagedLengths sets each length and each count of an Arrow
// file, and of a stream, that arrow-go sizes an allocation by to a value
// past the limit of the file: the reading fails, saying the file is
// corrupt, and allocates less than the limit. arrow-go v18.8.0 alone
// allocated what the value asked: 256 MiB for a length of a stream, for
// the uncompressed length of a buffer or for the window of a zstd frame
// (which it caps at 512 MiB), 32 to 369 MB for a count of 4 Mi buffers,
// strings or fields, and a count of 1 Gi fields ran it out of memory.
func TestArrowDamagedLengths(t *testing.T) {
	dir := t.TempDir()
	for _, d := range arrowDamages() {
		t.Run(strings.ReplaceAll(d.name, " ", "_"), func(t *testing.T) {
			data := d.good(t)
			path := filepath.Join(dir, "d.arrow")
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := readAllocating(path); !errors.Is(err, io.EOF) {
				t.Fatalf("good file: %v", err)
			}
			d.set(t, data)
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			alloc, err := readAllocating(path)
			t.Logf("%d bytes allocated: %v", alloc, err)
			if limit := memLimit(int64(len(data))); alloc > uint64(limit) {
				t.Errorf("%d bytes allocated, limit %d", alloc, limit)
			}
			if d.readable && errors.Is(err, io.EOF) {
				return
			}
			if err == nil || !strings.HasPrefix(err.Error(), path+": corrupt Arrow ") {
				t.Errorf("err = %v", err)
			}
		})
	}
}

// TestArrowCompressedBatches reads a ZSTD file of batches that hold more
// than the limit together, one at a time, and refuses the same values in
// one batch.
func TestArrowCompressedBatches(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{{Name: "v", Type: arrow.BinaryTypes.String}}, nil)
	value := strings.Repeat("0", 1<<20)
	batch := func(rows int) arrow.RecordBatch {
		b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
		defer b.Release()
		for range rows {
			b.Field(0).(*array.StringBuilder).Append(value)
		}
		return b.NewRecordBatch()
	}
	const rows = 20 // MiB, past the limit of the small file
	var batches []arrow.RecordBatch
	for range rows {
		batches = append(batches, batch(1))
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "many.arrow")
	data := writeArrow(t, schema, batches, false, ipc.WithZstd())
	if limit := memLimit(int64(len(data))); limit > rows<<20 {
		t.Fatalf("limit %d for %d bytes", limit, len(data))
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := source.Open(path, source.Options{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for {
		fields, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil || string(fields[0]) != value {
			t.Fatalf("row %d: %v", n+1, err)
		}
		n++
	}
	r.Close()
	if n != rows {
		t.Errorf("%d rows, want %d", n, rows)
	}

	path = filepath.Join(dir, "one.arrow")
	if err := os.WriteFile(path, writeArrow(t, schema, []arrow.RecordBatch{batch(rows)}, false, ipc.WithZstd()), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readAllocating(path); err == nil || !strings.HasPrefix(err.Error(), path+": corrupt Arrow data in record batch 1 (after row 0): ") ||
		!strings.Contains(err.Error(), "bytes a file of its size may decode to") ||
		!strings.HasSuffix(err.Error(), " held); if the file is not damaged, write it in smaller record batches") {
		t.Errorf("err = %v", err)
	}
}

// TestArrowNestedNulls reads a list of 16 Mi nulls, which takes a file a
// few hundred bytes: arrow-go allocated 2.4 GB building the text form of
// the value (84 MB); the reader refuses it as more values than a file of
// its size may decode to. A list of 3 nulls reads as before.
func TestArrowNestedNulls(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.PrimitiveTypes.Int64},
		{Name: "l", Type: arrow.ListOf(arrow.Null)},
	}, nil)
	dir := t.TempDir()
	for _, n := range []int{3, 1 << 24} {
		b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
		b.Field(0).(*array.Int64Builder).Append(1)
		lb := b.Field(1).(*array.ListBuilder)
		lb.Append(true)
		lb.ValueBuilder().(*array.NullBuilder).AppendNulls(n)
		rec := b.NewRecordBatch()
		b.Release()
		data := writeArrow(t, schema, []arrow.RecordBatch{rec}, false)
		rec.Release()
		path := filepath.Join(dir, fmt.Sprintf("%d.arrow", n))
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if n == 3 {
			r, err := source.Open(path, source.Options{})
			if err != nil {
				t.Fatal(err)
			}
			fields, err := r.Next()
			if err != nil || string(fields[1]) != "[null,null,null]" {
				t.Errorf("%d nulls: %q, %v", n, fields, err)
			}
			r.Close()
			continue
		}
		alloc, err := readAllocating(path)
		t.Logf("%d bytes, %d allocated: %v", len(data), alloc, err)
		if limit := memLimit(int64(len(data))); alloc > uint64(limit) {
			t.Errorf("%d bytes allocated, limit %d", alloc, limit)
		}
		if err == nil || !strings.HasPrefix(err.Error(), path+": corrupt Arrow data in record batch 1 (after row 0): a nested value holds more than ") {
			t.Errorf("err = %v", err)
		}
	}
}

// setPageSize sets field (2: the uncompressed size, 3: the compressed
// size) of the header of the first page of a Parquet file to v: the
// header is Thrift compact, a field an i32 in a zigzag varint.
func setPageSize(t testing.TB, good []byte, field int, v int64) []byte {
	t.Helper()
	pos := 4 // after PAR1
	for id := 1; ; id++ {
		if good[pos] != 0x15 {
			t.Fatalf("page header field %d: % x", id, good[pos:pos+8])
		}
		start := pos + 1
		pos = start
		for good[pos]&0x80 != 0 {
			pos++
		}
		pos++
		if id == field {
			return slices.Concat(good[:start], binary.AppendUvarint(nil, uint64(v)<<1), good[pos:])
		}
	}
}

// TestParquetDamagedPageSize sets the sizes of a page header to values
// within arrow-go's limits (256 and 64 MiB) but past the file's: the
// reading fails, and allocates less than the limit of the file (arrow-go
// alone allocated the sizes given, twice, 400 and 120 MiB).
func TestParquetDamagedPageSize(t *testing.T) {
	good := smallParquet(t)
	path := filepath.Join(t.TempDir(), "p.parquet")
	for _, tc := range []struct {
		name  string
		field int
		v     int64
	}{{"uncompressed", 2, 200 << 20}, {"compressed", 3, 60 << 20}} {
		data := setPageSize(t, good, tc.field, tc.v)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		alloc, err := readAllocating(path)
		t.Logf("%s: %d bytes allocated: %v", tc.name, alloc, err)
		if limit := memLimit(int64(len(data))); alloc > uint64(limit) {
			t.Errorf("%s: %d bytes allocated, limit %d", tc.name, alloc, limit)
		}
		if err == nil || !strings.HasPrefix(err.Error(), path+": corrupt Parquet page in column \"id\"") {
			t.Errorf("%s: err = %v", tc.name, err)
		}
	}
}

// FuzzArrow reads any bytes as an Arrow file or stream: an error names
// the file, and the reading allocates less than four times the limit of
// the file (a damaged footer may list a batch many times). The seeds are
// files and streams, compressed or not, and each damage of
// arrowDamages.
func FuzzArrow(f *testing.F) {
	for _, d := range arrowDamages() {
		good := d.good(f)
		f.Add(bytes.Clone(good))
		d.set(f, good)
		f.Add(good)
	}
	js, _ := filepath.Glob(filepath.Join("testdata", "js", "*.arrow"))
	for _, p := range js {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "f.arrow")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		alloc, err := readAllocating(path)
		if limit := 4 * memLimit(int64(len(data))); alloc > uint64(limit) {
			t.Errorf("%d bytes allocated, limit %d", alloc, limit)
		}
		if !errors.Is(err, io.EOF) && !strings.HasPrefix(err.Error(), path+": ") {
			t.Errorf("err = %v", err)
		}
	})
}

// TestArrowFooterBlocks: a footer that lists a block twice, or blocks
// that overlap (a record batch at a dictionary's offset), or a block out
// of order or inside the magic that starts the file, is refused as
// corrupt when the file is opened; each block of a file is read once.
func TestArrowFooterBlocks(t *testing.T) {
	schema, batches, _ := testBatches(t)
	good := writeArrow(t, schema, batches, false)
	js, err := os.ReadFile(filepath.Join("testdata", "js", "dict.arrow"))
	if err != nil {
		t.Fatal(err)
	}
	block := func(t *testing.T, data []byte, slot, i int) []byte {
		return elemOf(t, fbRoot(data, footerStart(data)), slot, i, 24)[:24]
	}
	for _, tc := range []struct {
		name string
		good []byte
		set  func(t *testing.T, data []byte)
		want string
	}{
		{"batch twice", good, func(t *testing.T, data []byte) {
			copy(block(t, data, footerRecordBatches, 1), block(t, data, footerRecordBatches, 0))
		}, "a block at offset 688 after one at offset 688"},
		{"batches out of order", good, func(t *testing.T, data []byte) {
			b0 := bytes.Clone(block(t, data, footerRecordBatches, 0))
			copy(block(t, data, footerRecordBatches, 0), block(t, data, footerRecordBatches, 1))
			copy(block(t, data, footerRecordBatches, 1), b0)
		}, "a block at offset 688 after one at offset 1720"},
		{"batch at the start", good, func(t *testing.T, data []byte) {
			binary.LittleEndian.PutUint64(block(t, data, footerRecordBatches, 0), 0)
		}, "a block at offset 0 of 704 bytes of metadata and 328 of body, outside bytes 8 to 2760 of the file"},
		{"batch at the dictionary", js, func(t *testing.T, data []byte) {
			copy(block(t, data, footerRecordBatches, 0), block(t, data, footerDictionaries, 0))
		}, "the block at offset 8 overlaps the one at offset 8"},
		{"batch inside the dictionary", js, func(t *testing.T, data []byte) {
			b := block(t, data, footerRecordBatches, 0)
			binary.LittleEndian.PutUint64(b, binary.LittleEndian.Uint64(block(t, data, footerDictionaries, 0))+8)
		}, "the block at offset 16 overlaps the one at offset 8"},
	} {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "b.arrow")
			if err := os.WriteFile(path, tc.good, 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := readAllocating(path); !errors.Is(err, io.EOF) {
				t.Fatalf("good file: %v", err)
			}
			data := bytes.Clone(tc.good)
			tc.set(t, data)
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := source.Open(path, source.Options{})
			if want := path + ": corrupt Arrow file: footer: " + tc.want; err == nil || err.Error() != want {
				t.Errorf("err  = %v\nwant %s", err, want)
			}
		})
	}
}

// TestArrowReadBudget: a file may not give more rows and nested values
// together than memLimit of its size (maxRead). A batch of 2^40 rows of
// a null column (a file of a few hundred bytes) is refused before its
// first row, and a dictionary of one list of 65,536 nulls that 300 rows
// index (19.7 M values) after the rows within the budget; 1,000,000 rows
// of an int64 column (8 MB) read.
func TestArrowReadBudget(t *testing.T) {
	dir := t.TempDir()
	write := func(t *testing.T, name string, schema *arrow.Schema, cols ...arrow.Array) string {
		rec := array.NewRecordBatch(schema, cols, int64(cols[0].Len()))
		defer rec.Release()
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, writeArrow(t, schema, []arrow.RecordBatch{rec}, false), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	readRows := func(path string) (int64, error) {
		r, err := source.Open(path, source.Options{})
		if err != nil {
			return 0, err
		}
		defer r.Close()
		for {
			if _, err := r.Next(); err != nil {
				return r.Line(), err
			}
		}
	}
	size := func(t *testing.T, path string) int64 {
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return st.Size()
	}

	t.Run("null rows", func(t *testing.T) {
		nulls := array.NewNull(1 << 40)
		defer nulls.Release()
		path := write(t, "null.arrow", arrow.NewSchema([]arrow.Field{{Name: "n", Type: arrow.Null, Nullable: true}}, nil), nulls)
		rows, err := readRows(path)
		want := fmt.Sprintf("%s: corrupt Arrow data in record batch 1 (after row 0): more rows than a file of %d bytes may hold", path, size(t, path))
		if rows != 0 || err == nil || err.Error() != want {
			t.Errorf("%d rows, err  = %v\nwant %s", rows, err, want)
		}
	})

	t.Run("dictionary of a list of nulls", func(t *testing.T) {
		lb := array.NewListBuilder(memory.DefaultAllocator, arrow.Null)
		lb.Append(true)
		lb.ValueBuilder().(*array.NullBuilder).AppendNulls(1 << 16)
		list := lb.NewArray()
		lb.Release()
		defer list.Release()
		ib := array.NewInt8Builder(memory.DefaultAllocator)
		ib.AppendValues(make([]int8, 300), nil)
		idx := ib.NewArray()
		ib.Release()
		defer idx.Release()
		dt := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int8, ValueType: list.DataType()}
		dict := array.NewDictionaryArray(dt, idx, list)
		defer dict.Release()
		path := write(t, "dict.arrow", arrow.NewSchema([]arrow.Field{{Name: "l", Type: dt}}, nil), dict)
		sz := size(t, path)
		rows, err := readRows(path)
		// The 300 rows, and then 65,537 values a row.
		wantRows := (maxRead(sz) - 300) / (1<<16 + 1)
		want := fmt.Sprintf("%s: corrupt Arrow data in record batch 1 (after row %d): more nested values than a file of %d bytes may hold", path, wantRows, sz)
		if rows != wantRows || err == nil || err.Error() != want {
			t.Errorf("%d rows, err  = %v\nwant %s", rows, err, want)
		}
	})

	t.Run("a million rows", func(t *testing.T) {
		const n = 1_000_000
		ib := array.NewInt64Builder(memory.DefaultAllocator)
		for i := range n {
			ib.Append(int64(i % 100))
		}
		col := ib.NewArray()
		ib.Release()
		defer col.Release()
		path := write(t, "ints.arrow", arrow.NewSchema([]arrow.Field{{Name: "i", Type: arrow.PrimitiveTypes.Int64}}, nil), col)
		t.Logf("%d bytes, a budget of %d", size(t, path), maxRead(size(t, path)))
		if rows, err := readRows(path); rows != n || !errors.Is(err, io.EOF) {
			t.Errorf("%d rows: %v", rows, err)
		}
	})
}
