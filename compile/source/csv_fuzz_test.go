package source_test

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/lutkit/lutkit/compile/source"
)

// FuzzCSV checks that no input makes the CSV reader panic or loop, and
// that every row it reads survives a trip through the CSV writer; the
// same for TSV, with the input's commas read as tabs.
func FuzzCSV(f *testing.F) {
	for _, tc := range csvCases {
		f.Add([]byte(tc.in))
	}
	for _, s := range []string{
		"a\n\"\"\n\n",
		"a,b\n\"x\"\"\r\n\"\r\n",
		"a\n\r\r\n\r",
		"\"a\nb\"\n\"\n",
		"a,b\n1,\"2\"\r",
		"\x1f\x8b\x08\x00\x00\x00\x00\x00",
		"a;b\n\"1;2\";3\n",
		"a\n\"x\"y\"z\n",
		"\xEF\xBB\xBF\"\xEF\xBB\xBFa\"\n1\n",
		"a,b\nsay \"hi\",\"x\"\"\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzDialect(t, data, "csv")
		fuzzDialect(t, bytes.ReplaceAll(data, []byte{','}, []byte{'\t'}), "tsv")
		fuzzNoQuote(t, data)
	})
}

// fuzzNoQuote reads data as CSV with quote: none: each row read is its
// line of the input, split at the commas, quotes and all.
func fuzzNoQuote(t *testing.T, data []byte) {
	r, err := source.NewCSVReaderSize(bytes.NewReader(data), "fuzz.csv", source.Options{Quote: source.QuoteNone}, nil, 7)
	if err != nil || bytes.HasPrefix(data, []byte{0x1f, 0x8b}) {
		return // gzip data: its lines are not the input's
	}
	lines := strings.Split(strings.TrimPrefix(string(data), "\xEF\xBB\xBF"), "\n")
	for i := 0; ; i++ {
		if i > 1<<20 {
			t.Fatalf("reader does not end")
		}
		fields, err := r.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			continue // a bad row (or a final error, then io.EOF)
		}
		n := r.Line()
		if n < 2 || int(n) > len(lines) {
			t.Fatalf("row at line %d of %d", n, len(lines))
		}
		joined := string(bytes.Join(fields, []byte{','}))
		if want := strings.TrimSuffix(lines[n-1], "\r"); joined != want {
			t.Fatalf("line %d read as %q, want %q", n, joined, want)
		}
	}
}

// fuzzDialect reads data as CSV or TSV (format), and writes and reads
// back the rows read.
func fuzzDialect(t *testing.T, data []byte, format string) {
	// A tiny buffer makes records cross buffer boundaries.
	r, err := source.NewCSVReaderSize(bytes.NewReader(data), "fuzz."+format, source.Options{}, nil, 7)
	if err != nil {
		return
	}
	cols := r.Columns()
	var rows [][][]byte
	for i := 0; ; i++ {
		if i > 1<<20 {
			t.Fatalf("reader does not end")
		}
		fields, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		var re *source.RowError
		if errors.As(err, &re) {
			if re.Line < 1 || re.Column < 0 || re.Column > len(cols)+len(data) {
				t.Fatalf("bad position in %v", err)
			}
			continue
		}
		if err != nil {
			// A final error (such as corrupt gzip data) ends the
			// input; the rows before it must still round-trip.
			if _, again := r.Next(); again == nil {
				t.Fatalf("final error %v is not sticky", err)
			}
			break
		}
		if len(fields) != len(cols) {
			t.Fatalf("row has %d fields, header %d", len(fields), len(cols))
		}
		// Where compile places a field once the reader has moved on is
		// where the reader places it.
		var fp source.FieldPositioner = r
		quoted := fp.AppendQuoted(nil)
		for j := 0; j <= len(fields); j++ {
			l, c := fp.FieldPos(j)
			if l2, c2 := source.FieldPosOf(fields, r.Line(), quoted, j); l2 != l || c2 != c {
				t.Fatalf("field %d of the row at line %d: FieldPos %d:%d, FieldPosOf %d:%d", j, r.Line(), l, c, l2, c2)
			}
		}
		row := make([][]byte, len(fields))
		for j, f := range fields {
			row[j] = bytes.Clone(f)
		}
		rows = append(rows, row)
	}

	var buf bytes.Buffer
	w, err := source.NewWriter(format, &buf, cols)
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range rows {
		if err := w.Write(row); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	encoded := buf.String()
	r2, err := source.NewCSVReaderSize(&buf, "again."+format, source.Options{}, nil, 13)
	if err != nil {
		t.Fatalf("re-reading %q: %v", encoded, err)
	}
	got := r2.Columns()
	if len(got) != len(cols) {
		t.Fatalf("columns %q, want %q", got, cols)
	}
	for i := range cols {
		if got[i] != cols[i] {
			t.Fatalf("columns %q, want %q", got, cols)
		}
	}
	for i, want := range rows {
		fields, err := r2.Next()
		if err != nil {
			t.Fatalf("row %d of %q: %v", i, encoded, err)
		}
		for j := range want {
			if !bytes.Equal(fields[j], want[j]) {
				t.Fatalf("row %d field %d: %q, want %q (encoded %q)", i, j, fields[j], want[j], encoded)
			}
		}
	}
	if _, err := r2.Next(); !errors.Is(err, io.EOF) {
		t.Fatalf("after %d rows: %v (encoded %q)", len(rows), err, encoded)
	}
}
