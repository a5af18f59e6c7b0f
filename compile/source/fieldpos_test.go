package source_test

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/lutkit/lutkit/compile/source"
	"github.com/lutkit/lutkit/compile/source/sourcetest"
)

// TestFieldPos reads random CSV and TSV rows (fields with quotes,
// delimiters, line breaks, multi-byte characters, quoted or not) and
// checks, for every field of every row and for the place past the last,
// that FieldPos gives the place where the field was written, and that
// FieldPosOf, from the fields, the line and AppendQuoted alone, gives the
// same. Rows of 70 fields put quoted fields past the first word of the
// set.
func TestFieldPos(t *testing.T) {
	for _, delim := range []byte{',', '\t'} {
		for _, width := range []int{3, 70} {
			rng := rand.New(rand.NewPCG(uint64(delim), uint64(width)))
			header := make([]string, width)
			for i := range header {
				header[i] = fmt.Sprintf("c%d", i)
			}
			rows := [][]string{header}
			for range 300 {
				row := make([]string, width)
				for i := range row {
					row[i] = sourcetest.RandomField(rng)
				}
				rows = append(rows, row)
			}
			text, places := sourcetest.WriteCSV(rng, rows, delim)
			for _, wrap := range []func(io.Reader) io.Reader{func(r io.Reader) io.Reader { return r }, iotest.OneByteReader} {
				t.Run(fmt.Sprintf("%q/%d", delim, width), func(t *testing.T) {
					checkFieldPos(t, wrap(strings.NewReader(text)), delim, rows, places)
				})
			}
		}
	}
}

func checkFieldPos(t *testing.T, in io.Reader, delim byte, rows [][]string, places [][]sourcetest.Pos) {
	t.Helper()
	r, err := source.NewCSVReader(in, "t.csv", source.Options{Delimiter: source.Delimiter(delim)})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	fp, ok := r.(source.FieldPositioner)
	if !ok {
		t.Fatal("the CSV reader is not a FieldPositioner")
	}
	quotedRows := 0
	for n := 1; ; n++ {
		fields, err := r.Next()
		if errors.Is(err, io.EOF) {
			if n != len(rows) {
				t.Fatalf("%d rows, want %d", n-1, len(rows)-1)
			}
			return
		}
		if err != nil {
			t.Fatalf("row %d: %v", n, err)
		}
		for i, f := range fields {
			if string(f) != rows[n][i] {
				t.Fatalf("row %d field %d: %q, want %q", n, i, f, rows[n][i])
			}
		}
		quoted := fp.AppendQuoted(nil)
		if len(quoted) > 0 {
			quotedRows++
		}
		for i := range len(fields) + 1 {
			want := places[n][i]
			if line, col := fp.FieldPos(i); line != want.Line || col != want.Column {
				t.Fatalf("row %d: FieldPos(%d) = %d:%d, want %d:%d", n, i, line, col, want.Line, want.Column)
			}
			if line, col := source.FieldPosOf(fields, r.Line(), quoted, i); line != want.Line || col != want.Column {
				t.Fatalf("row %d: FieldPosOf(%d) = %d:%d, want %d:%d", n, i, line, col, want.Line, want.Column)
			}
		}
		if n == len(rows)-1 && quotedRows == 0 {
			t.Fatal("no row has a quoted field")
		}
	}
}

// TestAppendQuoted: a row without quoted fields appends nothing (no cost
// for a caller that keeps the set of each row), and the set of a quoted
// row names its quoted fields.
func TestAppendQuoted(t *testing.T) {
	r, err := source.NewCSVReader(strings.NewReader("a,b,c\n1,2,3\n\"1\",2,\"3\"\n"), "t.csv", source.Options{})
	if err != nil {
		t.Fatal(err)
	}
	fp := r.(source.FieldPositioner)
	for _, want := range [][]uint64{nil, {0b101}} {
		if _, err := r.Next(); err != nil {
			t.Fatal(err)
		}
		dst := []uint64{7}
		if got := fp.AppendQuoted(dst); len(got) != 1+len(want) || got[0] != 7 || len(want) > 0 && got[1] != want[0] {
			t.Errorf("line %d: AppendQuoted = %b, want %b after 111", r.Line(), got, want)
		}
	}
}
