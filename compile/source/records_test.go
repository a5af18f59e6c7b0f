package source_test

import (
	"bytes"
	"compress/gzip"
	"encoding/csv"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/lutkit/lutkit/compile/source"
	"github.com/lutkit/lutkit/compile/source/sourcetest"
)

// record is what a reader returned for one record: its fields and where
// each starts.
type record struct {
	Fields []string
	Pos    [][2]int
}

// readRecords reads every record of data with CSVRecords, with a read
// buffer of bufSize bytes. ok is false when a record was bad.
func readRecords(t *testing.T, data []byte, bufSize int) (recs []record, ok bool) {
	t.Helper()
	r, err := source.NewCSVRecordsSize(bytes.NewReader(data), "in.csv", source.Options{}, bufSize)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	defer r.Close()
	for {
		fields, err := r.Next()
		if errors.Is(err, io.EOF) {
			return recs, true
		}
		if err != nil {
			var re *source.RowError
			if !errors.As(err, &re) || re.Line < 1 || re.File != "in.csv" {
				t.Fatalf("error %v is not a positioned RowError", err)
			}
			return recs, false
		}
		var rec record
		for i, f := range fields {
			rec.Fields = append(rec.Fields, string(f))
			l, c := r.FieldPos(i)
			rec.Pos = append(rec.Pos, [2]int{int(l), c})
		}
		if l, _ := r.FieldPos(0); l != r.Line() {
			t.Fatalf("record line %d, first field at line %d", r.Line(), l)
		}
		recs = append(recs, rec)
	}
}

// stdRecords reads data with encoding/csv the way compile/iptable did
// before it used CSVRecords. ok is false when encoding/csv refuses it.
func stdRecords(data []byte) (recs []record, ok bool) {
	r := csv.NewReader(bytes.NewReader(data))
	r.FieldsPerRecord = -1
	for {
		fields, err := r.Read()
		if errors.Is(err, io.EOF) {
			return recs, true
		}
		if err != nil {
			return nil, false
		}
		var rec record
		for i, f := range fields {
			rec.Fields = append(rec.Fields, f)
			l, c := r.FieldPos(i)
			rec.Pos = append(rec.Pos, [2]int{l, c})
		}
		recs = append(recs, rec)
	}
}

// sameAsStd checks that CSVRecords reads what encoding/csv reads, with
// the same field positions, for the inputs both dialects read alike:
// valid UTF-8 without CR (encoding/csv drops CRs in quoted fields) and
// without a byte order mark (CSVRecords skips it).
func sameAsStd(t *testing.T, data []byte) {
	if !utf8.Valid(data) || bytes.ContainsRune(data, '\r') || bytes.HasPrefix(data, []byte("\xEF\xBB\xBF")) || bytes.HasPrefix(data, []byte{0x1f, 0x8b}) {
		return
	}
	want, ok := stdRecords(data)
	if !ok {
		return
	}
	for _, size := range []int{7, 64 << 10} {
		got, ok := readRecords(t, data, size)
		if !ok {
			t.Fatalf("buffer %d: CSVRecords refused what encoding/csv reads: %q", size, data)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("buffer %d: %q\n got %v\nwant %v", size, data, got, want)
		}
	}
}

var recordsCases = []string{
	"a,b,c\n1,2,3\n",
	"cidr,asn\n10.0.0.0/8\n11.0.0.0/8,1,extra\n",
	"a,b\n\n\n1,2\n\n",
	"a,b\n\"x,y\",2\n3,\"multi\nline\nvalue\",after\n4,5",
	"a,b\n\"q\"\"uote\",\"\"\n",
	"x\n\"\"\n",
	"1.0.0.0,1.0.0.255,13335,\"Cloudflare, Inc.\"\n1.0.4.0,1.0.7.255,38803,Gtelecom\n",
	"s,e,label\n16777216,16777471,a\n",
	"a,\"b\nc\",\"d\"\ne,f\n",
	"ünï,cödé\nä,ö\n",
}

func TestCSVRecordsMatchEncodingCSV(t *testing.T) {
	for _, in := range recordsCases {
		sameAsStd(t, []byte(in))
	}
}

// TestCSVRecords: the first record is returned like the others, any
// number of fields, blank lines skipped, positions of quoted and
// multi-line fields, the byte order mark, gzip, and the same RowError as
// the Reader for a bad record.
func TestCSVRecords(t *testing.T) {
	got, ok := readRecords(t, []byte("\xEF\xBB\xBFa,b\n\n1,\"x\ny\",z\n2\n"), 64<<10)
	want := []record{
		{Fields: []string{"a", "b"}, Pos: [][2]int{{1, 1}, {1, 3}}},
		{Fields: []string{"1", "x\ny", "z"}, Pos: [][2]int{{3, 1}, {3, 3}, {4, 4}}},
		{Fields: []string{"2"}, Pos: [][2]int{{5, 1}}},
	}
	if !ok || !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	dir := t.TempDir()
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	if _, err := zw.Write([]byte("a;b\n1;2\n")); err != nil || zw.Close() != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "ranges.dat") // gzip found by its magic bytes
	writeTestFile(t, p, gz.Bytes())
	r, err := source.OpenCSVRecords(p, source.Options{Delimiter: ';'})
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for {
		f, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, string(bytes.Join(f, []byte("|"))))
	}
	r.Close()
	if strings.Join(rows, " ") != "a|b 1|2" {
		t.Errorf("gzip records %q", rows)
	}
	// Bad records: positioned like the Reader's, then reading goes on.
	r, _ = source.NewCSVRecords(strings.NewReader("a,b\n1,\"x\"y\n2,\xff\n3,4\n"), "bad.csv", source.Options{})
	if _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`bad.csv:2:3: extraneous character after closing quote`, `bad.csv:3:3: invalid UTF-8 in field 2`} {
		if _, err := r.Next(); err == nil || err.Error() != want {
			t.Errorf("err = %v, want %s", err, want)
		}
	}
	if f, err := r.Next(); err != nil || string(f[0]) != "3" {
		t.Errorf("after bad records: %q %v", f, err)
	}
	if _, err := source.OpenCSVRecords(filepath.Join(dir, "missing.csv"), source.Options{}); err == nil || !strings.Contains(err.Error(), "missing.csv") {
		t.Errorf("missing file: %v", err)
	}
}

func writeTestFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestOpenText(t *testing.T) {
	dir := t.TempDir()
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	if _, err := zw.Write([]byte("10.0.0.0/8\n")); err != nil || zw.Close() != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"plain.txt": []byte("10.0.0.0/8\n"), "list.txt.gz": gz.Bytes(), "list.txt": gz.Bytes()} {
		p := filepath.Join(dir, name)
		writeTestFile(t, p, data)
		f, err := source.OpenText(p)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(f)
		if err != nil || string(b) != "10.0.0.0/8\n" {
			t.Errorf("%s: %q %v", name, b, err)
		}
		if err := f.Close(); err != nil {
			t.Errorf("%s: close: %v", name, err)
		}
	}
	bad := filepath.Join(dir, "bad.gz")
	writeTestFile(t, bad, []byte("not gzip"))
	if _, err := source.OpenText(bad); err == nil || !strings.Contains(err.Error(), "bad.gz: gzip:") {
		t.Errorf("bad gzip: %v", err)
	}
}

// FuzzCSVRecords checks that no input makes CSVRecords panic or loop,
// that its row errors carry its line, and that it reads what encoding/csv
// reads, field positions included, wherever the two dialects agree.
func FuzzCSVRecords(f *testing.F) {
	for _, s := range recordsCases {
		f.Add([]byte(s))
	}
	f.Add([]byte("a\n\"x\"y\"z\n"))
	f.Add([]byte("\"a\nb\"\n\"\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := source.NewCSVRecordsSize(bytes.NewReader(data), "fuzz.csv", source.Options{}, 7)
		if err != nil {
			return
		}
		sourcetest.ReadAll(t, r)
		sameAsStd(t, data)
	})
}

// TestCSVRecordsLinesEndingWithCR: a file whose lines end with a CR
// alone reads as one line; its first record is refused, at the first CR
// outside quotes, and reading ends there. A CR in a later record, or
// quoted in the first, is a field's byte.
func TestCSVRecordsLinesEndingWithCR(t *testing.T) {
	r, err := source.NewCSVRecords(strings.NewReader("network,site\r10.0.0.0/8,a\r"), "in.csv", source.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Next()
	var re *source.RowError
	if !errors.As(err, &re) || !re.Final || re.Line != 1 || re.Column != 13 ||
		!strings.Contains(err.Error(), "a carriage return not followed by a line feed in the first line") {
		t.Fatalf("first record: %v, want a final error at in.csv:1:13 about the CR", err)
	}
	if _, again := r.Next(); !errors.Is(again, err) {
		t.Fatalf("after the refused first record, Next = %v, want the same error", again)
	}

	r, err = source.NewCSVRecords(strings.NewReader("\"a\rb\",c\nd\re,f\n"), "in.csv", source.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := sourcetest.ReadAll(t, r)
	if want := []string{"1:a\rb|c", "2:d\re|f"}; !reflect.DeepEqual(got.Rows, want) {
		t.Fatalf("records %q, want %q", got.Rows, want)
	}
}
