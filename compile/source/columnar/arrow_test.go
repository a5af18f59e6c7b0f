package columnar

import (
	"errors"

	"github.com/lutkit/lutkit/compile/source"
	"github.com/lutkit/lutkit/compile/source/sourcetest"

	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// testBatches builds two record batches covering the value types the
// readers convert, with nulls, and the text rows expected from them.
func testBatches(t testing.TB) (*arrow.Schema, []arrow.RecordBatch, []string) {
	t.Helper()
	mem := memory.DefaultAllocator
	tsType := &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "bin", Type: arrow.BinaryTypes.Binary, Nullable: true},
		{Name: "i64", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "i32", Type: arrow.PrimitiveTypes.Int32},
		{Name: "u16", Type: arrow.PrimitiveTypes.Uint16},
		{Name: "f64", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "f32", Type: arrow.PrimitiveTypes.Float32},
		{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "d", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
		{Name: "ts", Type: tsType, Nullable: true},
		{Name: "naive", Type: &arrow.TimestampType{Unit: arrow.Millisecond}},
		{Name: "dec", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}},
	}, nil)
	day := time.Date(2024, 2, 29, 13, 14, 15, 123456000, time.UTC)
	var batches []arrow.RecordBatch
	var want []string
	line := 0
	for batch := 0; batch < 2; batch++ {
		b := array.NewRecordBuilder(mem, schema)
		for i := 0; i < 3; i++ {
			line++
			null := i == 1
			k := batch*3 + i
			if null {
				b.Field(0).AppendNull()
				b.Field(1).AppendNull()
				b.Field(2).AppendNull()
				b.Field(5).AppendNull()
				b.Field(7).AppendNull()
				b.Field(8).AppendNull()
				b.Field(9).AppendNull()
			} else {
				b.Field(0).(*array.StringBuilder).Append(fmt.Sprintf("s%d, \"q\"\né", k))
				b.Field(1).(*array.BinaryBuilder).Append([]byte{0, 0xc3, 0xa9, byte(k)}) // UTF-8 text: its bytes
				b.Field(2).(*array.Int64Builder).Append(-int64(k) * 1e15)
				b.Field(5).(*array.Float64Builder).Append(0.1 * float64(k+1))
				b.Field(7).(*array.BooleanBuilder).Append(k%2 == 0)
				b.Field(8).(*array.Date32Builder).Append(arrow.Date32FromTime(day))
				ts, _ := arrow.TimestampFromTime(day, arrow.Microsecond)
				b.Field(9).(*array.TimestampBuilder).Append(ts)
			}
			b.Field(3).(*array.Int32Builder).Append(int32(k))
			b.Field(4).(*array.Uint16Builder).Append(65535)
			b.Field(6).(*array.Float32Builder).Append(1.1)
			nts, _ := arrow.TimestampFromTime(day, arrow.Millisecond)
			b.Field(10).(*array.TimestampBuilder).Append(nts)
			b.Field(11).(*array.Decimal128Builder).Append(decimal128.FromI64(int64(12345 + k)))
			if null {
				want = append(want, fmt.Sprintf("%d:|||%d|65535||1.1||||2024-02-29T13:14:15.123|%d.%02d", line, k, (12345+k)/100, (12345+k)%100))
			} else {
				want = append(want, fmt.Sprintf("%d:s%d, \"q\"\né|\x00é%c|%d|%d|65535|%g|1.1|%t|2024-02-29|2024-02-29T13:14:15.123456Z|2024-02-29T13:14:15.123|%d.%02d",
					line, k, byte(k), -int64(k)*1e15, k, 0.1*float64(k+1), k%2 == 0, (12345+k)/100, (12345+k)%100))
			}
		}
		batches = append(batches, b.NewRecordBatch())
		b.Release()
	}
	return schema, batches, want
}

func TestArrowIPC(t *testing.T) {
	schema, batches, want := testBatches(t)
	dir := t.TempDir()
	cols := make([]string, schema.NumFields())
	for i, f := range schema.Fields() {
		cols[i] = f.Name
	}

	for _, tc := range []struct {
		name   string
		stream bool
		opts   []ipc.Option
	}{
		{"data.arrow", false, nil}, {"data.feather", false, nil}, {"stream.ipc", true, nil},
		{"lz4.arrow", false, []ipc.Option{ipc.WithLZ4()}}, {"zstd.arrow", false, []ipc.Option{ipc.WithZstd()}},
		{"lz4.ipc", true, []ipc.Option{ipc.WithLZ4()}}, {"zstd.ipc", true, []ipc.Option{ipc.WithZstd()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, tc.name)
			if err := os.WriteFile(p, writeArrow(t, schema, batches, tc.stream, tc.opts...), 0o644); err != nil {
				t.Fatal(err)
			}
			r, err := source.Open(p, source.Options{})
			if err != nil {
				t.Fatal(err)
			}
			// The schema types the columns whose text is a JSON number or
			// bool (source.Typed, for compile's SourceTypes).
			wantTypes := []string{"", "", "number", "number", "number", "number", "number", "bool", "", "", "", "number"}
			if typed, ok := r.(source.Typed); !ok || !reflect.DeepEqual(typed.ColumnTypes(), wantTypes) {
				t.Errorf("column types %v (typed %t), want %v", typed, ok, wantTypes)
			}
			got := sourcetest.ReadAll(t, r)
			if err := r.Close(); err != nil {
				t.Error(err)
			}
			w := sourcetest.Result{Columns: cols, Rows: want}
			if !reflect.DeepEqual(got, w) {
				t.Errorf("got  %q\nwant %q", got, w)
			}
		})
	}
	t.Run("garbage", func(t *testing.T) {
		p := filepath.Join(dir, "bad.arrow")
		if err := os.WriteFile(p, []byte("not arrow at all"), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := source.Open(p, source.Options{}); err == nil || !strings.HasPrefix(err.Error(), p+": ") {
			t.Errorf("err = %v", err)
		}
	})
}

// TestArrowJSFiles reads Arrow IPC files written by Apache Arrow's
// JavaScript library (npm apache-arrow 21.2.0, RecordBatchFileWriter):
// the file starts with its first batch, not with a schema message (a
// dictionary batch, or the end-of-stream marker of a file of no batches),
// and its schema is its footer's. testdata/js/dict.arrow holds a string
// column, which the library writes as a dictionary, and an Int32 column;
// testdata/js/empty.arrow holds the schema of one string column and no
// batches.
func TestArrowJSFiles(t *testing.T) {
	for _, tc := range []struct {
		name string
		at8  []ipc.MessageType // the messages from offset 8
		want sourcetest.Result
	}{
		{"dict.arrow", []ipc.MessageType{ipc.MessageDictionaryBatch, ipc.MessageRecordBatch},
			sourcetest.Result{Columns: []string{"ip", "n"}, Rows: []string{"1:1.2.3.4|1", "2:5.6.7.8|2"}}},
		{"empty.arrow", nil, sourcetest.Result{Columns: []string{"ip"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join("testdata", "js", tc.name)
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			var at8 []ipc.MessageType
			for _, m := range listMessages(t, data, 8) {
				at8 = append(at8, m.typ)
			}
			if !reflect.DeepEqual(at8, tc.at8) {
				t.Fatalf("messages from offset 8: %v, want %v", at8, tc.at8)
			}
			r, err := source.Open(p, source.Options{})
			if err != nil {
				t.Fatal(err)
			}
			got := sourcetest.ReadAll(t, r)
			if err := r.Close(); err != nil {
				t.Error(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestParquetRead(t *testing.T) {
	schema, batches, want := testBatches(t)
	p := filepath.Join(t.TempDir(), "data.parquet")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	props := parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(2))
	fw, err := pqarrow.NewFileWriter(schema, f, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range batches {
		if err := fw.Write(rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := source.Open(p, source.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got := sourcetest.ReadAll(t, r)
	cols := make([]string, schema.NumFields())
	for i, f := range schema.Fields() {
		cols[i] = f.Name
	}
	if w := (sourcetest.Result{Columns: cols, Rows: want}); !reflect.DeepEqual(got, w) {
		t.Errorf("got  %q\nwant %q", got, w)
	}

	bad := filepath.Join(t.TempDir(), "bad.parquet")
	if err := os.WriteFile(bad, []byte("PAR1 nope"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := source.Open(bad, source.Options{}); err == nil || !strings.HasPrefix(err.Error(), bad+": ") {
		t.Errorf("bad parquet: %v", err)
	}
}

// TestParquetWriterRoundTrip writes more than one row group with the
// Parquet writer and reads it back. The writer stores the bytes of each
// value as they are; the reader refuses a value that is not UTF-8 (every
// 997th row) as a bad row.
func TestParquetWriterRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	cols := []string{"key", "value", "empty"}
	n := parquetRowGroupRows + 1234
	rows := make([][]string, n)
	for i := range rows {
		rows[i] = []string{fmt.Sprintf("k%d", i), sourcetest.RandomField(rng), ""}
		if i%997 == 0 {
			rows[i][1] += "\xff"
		}
	}
	p := filepath.Join(t.TempDir(), "out.parquet")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	w, err := source.NewWriter("parquet", f, cols)
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range rows {
		if err := w.Write([][]byte{[]byte(row[0]), []byte(row[1]), []byte(row[2])}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	// The destination stays open: Close must not close it.
	if _, err := f.Write(nil); err != nil {
		t.Errorf("writer closed the file: %v", err)
	}
	f.Close()

	r, err := source.Open(p, source.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if !reflect.DeepEqual(r.Columns(), cols) {
		t.Fatalf("columns %q", r.Columns())
	}
	for i, want := range rows {
		fields, err := r.Next()
		if i%997 == 0 {
			var re *source.RowError
			if !errors.As(err, &re) || re.Line != int64(i+1) || re.Column != 2 || re.Final ||
				!strings.HasSuffix(err.Error(), fmt.Sprintf(`invalid UTF-8 in column "value", row %d`, i+1)) {
				t.Fatalf("row %d: %v", i, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("row %d: %v", i, err)
		}
		for j := range want {
			if string(fields[j]) != want[j] {
				t.Fatalf("row %d field %d: %q, want %q", i, j, fields[j], want[j])
			}
		}
		if r.Line() != int64(i+1) {
			t.Fatalf("Line() = %d, want %d", r.Line(), i+1)
		}
	}
	if _, err := r.Next(); !errors.Is(err, io.EOF) {
		t.Fatalf("at end: %v", err)
	}

	pf, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	md, err := readParquetRowGroups(pf)
	if err != nil {
		t.Fatal(err)
	}
	if md != 2 {
		t.Errorf("%d row groups, want 2", md)
	}
	// The bytes as written, read without the reader.
	if _, err := pf.Seek(0, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	tbl, err := pqarrow.ReadTable(context.Background(), pf, nil, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Release()
	i := 0
	for _, chunk := range tbl.Column(1).Data().Chunks() {
		for j := range chunk.Len() {
			if got := chunk.(*array.String).Value(j); got != rows[i][1] {
				t.Fatalf("row %d stored %q, want %q", i, got, rows[i][1])
			}
			i++
		}
	}
	if i != n {
		t.Fatalf("%d values stored, want %d", i, n)
	}
}

func TestJSONLWriter(t *testing.T) {
	var buf bytes.Buffer
	w, err := source.NewWriter("jsonl", &buf, []string{"b", "a", "q\"uote"})
	if err != nil {
		t.Fatal(err)
	}
	rows := [][]string{
		{"1", "x", ""},
		{"line\nbreak\ttab\x01", "\"quoted\" \\ back", "é 日本 🚀 \u2028"},
		{"bad \xff utf8", "", "<&>"},
	}
	for _, row := range rows {
		if err := w.Write([][]byte{[]byte(row[0]), []byte(row[1]), []byte(row[2])}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Write([][]byte{nil}); err == nil {
		t.Error("short row accepted")
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != len(rows) {
		t.Fatalf("%d lines: %q", len(lines), buf.String())
	}
	if !strings.HasPrefix(lines[0], `{"b":"1","a":"x","q\"uote":""}`) {
		t.Errorf("key order: %s", lines[0])
	}
	for i, line := range lines {
		var m map[string]string
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("line %d %q: %v", i, line, err)
		}
		want := rows[i]
		if i == 2 {
			want = []string{"bad \ufffd utf8", "", "<&>"}
		}
		if m["b"] != want[0] || m["a"] != want[1] || m["q\"uote"] != want[2] {
			t.Errorf("line %d: %q, want %q", i, m, want)
		}
	}
}

func TestWriterErrors(t *testing.T) {
	if _, err := source.NewWriter("xml", io.Discard, []string{"a"}); err == nil {
		t.Error("unknown format accepted")
	}
	if _, err := source.NewWriter("csv", io.Discard, nil); err == nil {
		t.Error("no columns accepted")
	}
	if _, err := source.NewWriter("parquet", io.Discard, []string{"a", "a"}); err == nil {
		t.Error("duplicate parquet columns accepted")
	}
	w, _ := source.NewWriter("csv", io.Discard, []string{"a", "b"})
	if err := w.Write([][]byte{[]byte("x")}); err == nil || err.Error() != "source: row has 1 fields, want 2" {
		t.Errorf("short row: %v", err)
	}
}

func TestCSVWriterOutput(t *testing.T) {
	var buf bytes.Buffer
	w, err := source.NewWriter("csv", &buf, []string{"a", "b c"})
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range [][2]string{{"plain", " spaced "}, {"com,ma", `q"uote`}, {"cr\r", "lf\n"}, {"", ""}} {
		if err := w.Write([][]byte{[]byte(row[0]), []byte(row[1])}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	want := "a,b c\nplain, spaced \n\"com,ma\",\"q\"\"uote\"\n\"cr\r\",\"lf\n\"\n,\n"
	if buf.String() != want {
		t.Errorf("got %q\nwant %q", buf.String(), want)
	}
	buf.Reset()
	if w, err = source.NewWriter("tsv", &buf, []string{"only"}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"", "a,b\tc"} {
		if err := w.Write([][]byte{[]byte(f)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if want := "only\n\"\"\n\"a,b\tc\"\n"; buf.String() != want {
		t.Errorf("got %q\nwant %q", buf.String(), want)
	}
}

// readParquetRowGroups returns the number of row groups in a Parquet file.
func readParquetRowGroups(f *os.File) (int, error) {
	pr, err := file.NewParquetReader(f)
	if err != nil {
		return 0, err
	}
	return pr.NumRowGroups(), nil
}

// TestColumnarNotUTF8: a string value holding invalid UTF-8, or a binary
// value of bytes that are not UTF-8 text, is a bad row naming its row and
// column, read from Arrow or Parquet, in a dictionary too; a binary value
// of UTF-8 text is its bytes.
func TestColumnarNotUTF8(t *testing.T) {
	mem := memory.DefaultAllocator
	dictType := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int8, ValueType: arrow.BinaryTypes.String}
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "s", Type: arrow.BinaryTypes.String},
		{Name: "bin", Type: arrow.BinaryTypes.Binary},
		{Name: "d", Type: dictType},
	}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for i, row := range [][3]string{
		{"a", "blob", "x"},
		{"b\xff", "", "x"},
		{"c", "\xff\x00blob", "x"},
		{"d", "", "y\xfe"},
		{"e", "é", "x"},
	} {
		b.Field(0).(*array.Int64Builder).Append(int64(i + 1))
		b.Field(1).(*array.StringBuilder).Append(row[0])
		b.Field(2).(*array.BinaryBuilder).Append([]byte(row[1]))
		if err := b.Field(3).(*array.BinaryDictionaryBuilder).AppendString(row[2]); err != nil {
			t.Fatal(err)
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	want := sourcetest.Result{
		Columns: []string{"id", "s", "bin", "d"},
		Rows:    []string{"1:1|a|blob|x", "5:5|e|é|x"},
		Errs: []string{
			`:2:2: invalid UTF-8 in column "s", row 2`,
			`:3:3: binary value in column "bin", row 3, is not UTF-8 text; write a text form of it (such as hex) to the file`,
			`:4:4: invalid UTF-8 in column "d", row 4`,
		},
	}
	dir := t.TempDir()
	arrowPath := filepath.Join(dir, "t.arrow")
	if err := os.WriteFile(arrowPath, writeArrow(t, schema, []arrow.RecordBatch{rec}, false), 0o644); err != nil {
		t.Fatal(err)
	}
	parquetPath := filepath.Join(dir, "t.parquet")
	f, err := os.Create(parquetPath)
	if err != nil {
		t.Fatal(err)
	}
	fw, err := pqarrow.NewFileWriter(schema, f, parquet.NewWriterProperties(), pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		t.Fatal(err)
	}
	if err := fw.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{arrowPath, parquetPath} {
		r, err := source.Open(path, source.Options{})
		if err != nil {
			t.Fatal(err)
		}
		got := sourcetest.ReadAll(t, r)
		r.Close()
		for i, e := range got.Errs {
			got.Errs[i] = strings.TrimPrefix(e, path)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\ngot  %q\nwant %q", filepath.Ext(path), got, want)
		}
	}
}

// TestArrowUTF8AcrossFields: a field ending in the first byte of a rune
// and the next field starting with the rest hold invalid UTF-8 each,
// though the two read as one valid rune ("é") together.
func TestArrowUTF8AcrossFields(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.BinaryTypes.String},
		{Name: "v", Type: arrow.BinaryTypes.String},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for _, row := range [][2]string{{"key\xc3", "\xa9"}, {"k\xc3\xa9", "v"}} {
		b.Field(0).(*array.StringBuilder).Append(row[0])
		b.Field(1).(*array.StringBuilder).Append(row[1])
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	p := filepath.Join(t.TempDir(), "t.arrow")
	if err := os.WriteFile(p, writeArrow(t, schema, []arrow.RecordBatch{rec}, false), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := source.Open(p, source.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := sourcetest.ReadAll(t, r)
	r.Close()
	want := sourcetest.Result{
		Columns: []string{"k", "v"},
		Rows:    []string{"2:k\u00e9|v"},
		Errs:    []string{p + `:1:1: invalid UTF-8 in column "k", row 1`},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

// TestParquetCorruptPage damages the pages of one column chunk byte by
// byte: a read that fails says plainly which column of which row group
// did not decode, with the decoder's own words (a Go runtime error, when
// it panicked) only after that.
func TestParquetCorruptPage(t *testing.T) {
	mem := memory.DefaultAllocator
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "name", Type: arrow.BinaryTypes.String},
		{Name: "city", Type: arrow.BinaryTypes.String},
	}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for i := range 300 {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("name %d", i))
		b.Field(2).(*array.StringBuilder).Append(fmt.Sprintf("city %d", i%7))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	var buf bytes.Buffer
	fw, err := pqarrow.NewFileWriter(schema, &buf, parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(100)), pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	if err := fw.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	good := buf.Bytes()
	pf, err := file.NewParquetReader(bytes.NewReader(good))
	if err != nil {
		t.Fatal(err)
	}
	chunk, err := pf.MetaData().RowGroup(1).ColumnChunk(2)
	if err != nil {
		t.Fatal(err)
	}
	start := chunk.DataPageOffset()
	if d := chunk.DictionaryPageOffset(); chunk.HasDictionaryPage() && d < start {
		start = d
	}
	end := start + chunk.TotalCompressedSize()

	path := filepath.Join(t.TempDir(), "c.parquet")
	located, panicked := 0, 0
	for off := start; off < end; off++ {
		for _, v := range []byte{0x00, 0xff} {
			data := bytes.Clone(good)
			data[off] = v
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			r, err := source.Open(path, source.Options{})
			if err != nil {
				t.Fatalf("offset %d: open: %v", off, err)
			}
			for {
				_, err = r.Next()
				if err == nil || source.Skippable(err) {
					continue
				}
				break
			}
			r.Close()
			if errors.Is(err, io.EOF) {
				continue // a byte the decoder does not check
			}
			msg := strings.TrimPrefix(err.Error(), path+": ")
			if !strings.HasPrefix(msg, "corrupt Parquet ") {
				t.Fatalf("offset %d = %#x: %v", off, v, err)
			}
			if strings.HasPrefix(msg, `corrupt Parquet page in column "city" of row group 2 of 3 (rows 101-200): `) {
				located++
			}
			if strings.Contains(msg, "runtime error") {
				panicked++
			}
		}
	}
	t.Logf("%d bytes damaged, %d reads failed at the column chunk, %d of them in a panic", end-start, located, panicked)
	if located == 0 {
		t.Error("no damage was located at its column chunk")
	}
}

// TestCorruptBatch: a panic decoding a batch that the reader cannot
// place is still an error saying what could not be read, and where.
func TestCorruptBatch(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64}}, nil)
	next := func() (arrow.RecordBatch, error) { panic("runtime error: makeslice: len out of range") }
	r, err := newBatchReader("x.arrow", "Arrow", schema, next, func() error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Next()
	if err == nil || err.Error() != "x.arrow: corrupt Arrow data in record batch 1 (after row 0): runtime error: makeslice: len out of range" {
		t.Errorf("err = %v", err)
	}
	if _, again := r.Next(); !errors.Is(again, err) {
		t.Errorf("not sticky: %v", again)
	}
}

// TestParquetCorruptFooter damages the footer byte by byte: the reader
// never panics (the decoder did, on lengths it trusted), and an error
// names the file.
func TestParquetCorruptFooter(t *testing.T) {
	good := smallParquet(t)
	footer := int(good[len(good)-8]) | int(good[len(good)-7])<<8 | int(good[len(good)-6])<<16 | int(good[len(good)-5])<<24
	eachDamage(t, good, "f.parquet", len(good)-8-footer, len(good)-4, nil)
}

// eachDamage sets the byte at each offset of [from, to) of good to 0x00
// and to 0xff in turn, opens the damaged file (named name) and reads it
// to its end, allocating less than memLimit of its size: an error of Open
// must name the file, and check (when not nil) gets the error that ends
// the reading (io.EOF at the end).
func eachDamage(t *testing.T, good []byte, name string, from, to int, check func(path string, off int, v byte, err error)) {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	limit := memLimit(int64(len(good)))
	for off := from; off < to; off++ {
		for _, v := range []byte{0x00, 0xff} {
			data := bytes.Clone(good)
			data[off] = v
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			alloc, opening, err := readAllocatingOpen(path)
			if alloc > uint64(limit) {
				t.Fatalf("offset %d = %#x: %d bytes allocated, limit %d: %v", off, v, alloc, limit, err)
			}
			if opening {
				if !strings.HasPrefix(err.Error(), path+": ") {
					t.Fatalf("offset %d = %#x: %v", off, v, err)
				}
				continue
			}
			if check != nil {
				check(path, off, v, err)
			}
		}
	}
}

// TestArrowCorrupt damages an Arrow IPC file, and a stream, byte by
// byte, to its end: the reader never panics (the decoder did, on lengths
// it trusted), nor allocates past the limit of the file (a damaged count
// ran arrow-go v18.8.0 out of memory), and an error names the file and
// says what could not be read.
func TestArrowCorrupt(t *testing.T) {
	schema, batches, _ := testBatches(t)
	for _, stream := range []bool{false, true} {
		good := writeArrow(t, schema, batches, stream)
		eachDamage(t, good, "c.arrow", 0, len(good), func(path string, off int, v byte, err error) {
			if !errors.Is(err, io.EOF) && !strings.HasPrefix(err.Error(), path+": corrupt Arrow data in record batch ") {
				t.Fatalf("stream %t, offset %d = %#x: %v", stream, off, v, err)
			}
		})
	}
}
