package compile

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lutkit/lutkit/compile/source"
	"github.com/lutkit/lutkit/compile/source/sourcetest"
)

// compileText compiles CSV or TSV text (by name) with opts, naming the
// source name in errors.
func compileText(t *testing.T, text, name string, opts Options) (*Stats, error) {
	t.Helper()
	src, err := source.NewCSVReader(strings.NewReader(text), name, source.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	opts.SourceName = name
	return File(src, filepath.Join(t.TempDir(), "t.lut"), opts)
}

// rowErrorAt checks that err is a *source.RowError at line:column.
func rowErrorAt(t *testing.T, err error, line int64, column int, what string) {
	t.Helper()
	var re *source.RowError
	if !errors.As(err, &re) {
		t.Fatalf("%s: %v, want a row error", what, err)
	}
	if re.Line != line || re.Column != column {
		t.Errorf("%s: %v, want it at %d:%d", what, err, line, column)
	}
}

// TestFieldErrorPlaces: compile reads rows batches ahead of the checks
// (rows.go), yet an error about a field's value in a CSV or TSV source is
// placed where that field starts in that row: rows of random quoted
// fields, multi-line and multi-byte, some with a bad number, over several
// batches, each bad one at the place where it was written. A source
// without byte positions gives the field number.
func TestFieldErrorPlaces(t *testing.T) {
	const rows = 3*batchRows + 100
	for _, name := range []string{"t.csv", "t.tsv"} {
		delim := byte(',')
		if name == "t.tsv" {
			delim = '\t'
		}
		rng := rand.New(rand.NewPCG(uint64(delim), 1))
		data := [][]string{{"id", "note", "price"}}
		var bad []int
		for i := 1; i <= rows; i++ {
			note, price := sourcetest.RandomField(rng), "1.5"
			if i%401 == 0 || i == rows {
				price, bad = "x", append(bad, i)
				if i%2 == 0 {
					note = "é\n" + note // the bad field on a later line
				}
			}
			data = append(data, []string{fmt.Sprint(i), note, price})
		}
		text, places := sourcetest.WriteCSV(rng, data, delim)
		opts := Options{Key: []string{"id"}, ColumnTypes: map[string]string{"price": "number"}, SkipBadRows: true, MaxBadRowErrors: len(bad)}
		st, err := compileText(t, text, name, opts)
		if err != nil {
			t.Fatal(err)
		}
		if len(st.BadRows) != len(bad) {
			t.Fatalf("%s: %d bad rows, want %d", name, len(st.BadRows), len(bad))
		}
		multiLine := 0
		for k, i := range bad {
			at := places[i][2]
			if at.Line != places[i][0].Line {
				multiLine++
			}
			rowErrorAt(t, st.BadRows[k], at.Line, at.Column, fmt.Sprintf("%s row %d", name, i))
		}
		if multiLine == 0 {
			t.Fatalf("%s: no bad field is on a later line than its row's first", name)
		}

		// The same rows from a source without byte positions.
		st, err = File(&source.Rows{Header: data[0], Data: data[1:]}, filepath.Join(t.TempDir(), "t.lut"), opts)
		if err != nil {
			t.Fatal(err)
		}
		for k, i := range bad {
			rowErrorAt(t, st.BadRows[k], int64(i)+1, 3, fmt.Sprintf("rows: row %d", i))
		}
	}
}

// TestValueErrorPlaces: the errors of compile about one field of a CSV
// row (a range bound, a composite key's part, a pattern, a pattern
// warned about) are at the line and byte column where the field starts,
// after a quoted field holding a line break and multi-byte characters.
func TestValueErrorPlaces(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		opts       Options
		line       int64
		column     int
	}{
		{"range bound", "name,from,to\n\"é\nb\",1,x\n", Options{Match: MatchRange, RangeColumns: []string{"from", "to"}}, 3, 6},
		{"empty range", "name,from,to\n\"é\nb\",7,1\n", Options{Match: MatchRange, RangeColumns: []string{"from", "to"}}, 3, 4},
		{"composite key part", "note,a,b\n\"日本\n\",x,\"y\x1f\"\n", Options{Key: []string{"a", "b"}}, 3, 5},
		{"bad pattern", "note,pattern\n\"x\n日本\",(bad\n", Options{Key: []string{"pattern"}, Match: MatchPattern}, 3, 9},
		{"empty glob", "note,glob\né,\"\"\n", Options{Key: []string{"glob"}, Match: MatchWildcard}, 2, 4},
		{"bad domain", "note,domain\né,a..b\n", Options{Key: []string{"domain"}, Match: MatchSuffix}, 2, 4},
	} {
		_, err := compileText(t, tc.text, "t.csv", tc.opts)
		rowErrorAt(t, err, tc.line, tc.column, tc.name)
	}
	st, err := compileText(t, "note,pattern\n\"x\n日本\",.*\n", "t.csv", Options{Key: []string{"pattern"}, Match: MatchPattern})
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Warnings) != 1 {
		t.Fatalf("warnings %v, want one", st.Warnings)
	}
	rowErrorAt(t, st.Warnings[0], 3, 9, "pattern without a literal")
}

// TestLaterErrorPlaces: a duplicate key or an overlap, found once the
// source has been read, is at column 1 of its row's line in a CSV source
// when its column is the row's first field, at the line alone otherwise;
// in a source without byte positions at the field number.
func TestLaterErrorPlaces(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		opts       Options
		column     int // in the CSV source
		rowsColumn int // in source.Rows
		want       string
	}{
		{"duplicate, first field", "k,v\na,1\n\"b\nc\",2\na,3\n", Options{Key: []string{"k"}}, 1, 1,
			`duplicate key "a" at lines 2 and 5`},
		{"duplicate, second field", "v,k\n\"é\nx\",a\n2,b\n3,a\n", Options{Key: []string{"k"}}, 0, 2,
			`duplicate key "a" at lines 2 and 5`},
		{"overlap, first fields", "from,to,v\n1,9,a\n5,5,\"b\nc\"\n", Options{Match: MatchRange, RangeColumns: []string{"from", "to"}}, 1, 1,
			"ranges overlap: [5, 5] of this row and [1, 9] of the row at t.csv:2:1 "},
		{"overlap, later fields", "v,from,to\n\"a\nb\",1,9\nc,5,5\n", Options{Match: MatchRange, RangeColumns: []string{"from", "to"}}, 0, 2,
			"ranges overlap: [5, 5] of this row and [1, 9] of the row at t.csv:2 "},
		{"validity overlap, later fields", "k,from,to\na,1,10\n\"a\",5,20\n", Options{Key: []string{"k"}, ValidFrom: "from", ValidTo: "to"}, 0, 2,
			"validities of one key overlap: [5, 20) of this row and [1, 10) of the row at t.csv:2 "},
	} {
		_, err := compileText(t, tc.text, "t.csv", tc.opts)
		var re *source.RowError
		if !errors.As(err, &re) || re.Column != tc.column || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want column %d and %q", tc.name, err, tc.column, tc.want)
		}
		// The same rows, one a line, from a source without byte positions.
		src, err := source.NewCSVReader(strings.NewReader(tc.text), "t.csv", source.Options{})
		if err != nil {
			t.Fatal(err)
		}
		rows := &source.Rows{Header: src.Columns()}
		for {
			f, err := src.Next()
			if err != nil {
				break
			}
			var row []string
			for _, v := range f {
				row = append(row, string(v))
			}
			rows.Data = append(rows.Data, row)
		}
		opts := tc.opts
		opts.SourceName = "rows"
		_, err = File(rows, filepath.Join(t.TempDir(), "t.lut"), opts)
		if !errors.As(err, &re) || re.Column != tc.rowsColumn {
			t.Errorf("%s from rows: %v, want column %d", tc.name, err, tc.rowsColumn)
		}
	}
}
