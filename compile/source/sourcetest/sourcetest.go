// Package sourcetest reads a whole source.Reader into a comparable form,
// for the tests of the source format packages.
package sourcetest

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/lutkit/lutkit/compile/source"
)

// Result is everything a reader produced, in a comparable form.
type Result struct {
	Columns []string
	Rows    []string // fields joined with "|", prefixed with the line: "3:a|b"
	Errs    []string
}

// Rows is what ReadAll reads: a source.Reader, or a source.CSVRecords.
type Rows interface {
	Next() ([][]byte, error)
	Line() int64
}

// ReadAll reads r to the end, continuing after row errors (but for final
// ones, recorded with the prefix "final: " as other final errors are),
// and checks that row errors carry the reader's line and that the end
// and a final row error are sticky.
func ReadAll(t testing.TB, r Rows) Result {
	t.Helper()
	var res Result
	if c, ok := r.(interface{ Columns() []string }); ok {
		res.Columns = c.Columns()
	}
	for i := 0; ; i++ {
		if i > 1e6 {
			t.Fatal("reader does not end")
		}
		fields, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		var re *source.RowError
		if errors.As(err, &re) {
			if re.Line != r.Line() {
				t.Errorf("RowError line %d, Line() %d", re.Line, r.Line())
			}
			if re.Final {
				res.Errs = append(res.Errs, "final: "+err.Error())
				if _, again := r.Next(); !errors.Is(again, err) {
					t.Errorf("final row error %v, then %v", err, again)
				}
				break
			}
			res.Errs = append(res.Errs, err.Error())
			continue
		}
		if err != nil {
			res.Errs = append(res.Errs, "final: "+err.Error())
			break
		}
		strs := make([]string, len(fields))
		for j, f := range fields {
			strs[j] = string(f)
		}
		res.Rows = append(res.Rows, fmt.Sprintf("%d:%s", r.Line(), strings.Join(strs, "|")))
	}
	if _, err := r.Next(); err == nil {
		t.Error("Next after the end returned a row")
	}
	return res
}

// RandomField returns a field mixing plain text, delimiters, quotes,
// newlines, spaces, a byte order mark and multi-byte characters: the
// values a writer must quote correctly.
func RandomField(rng interface{ IntN(int) int }) string {
	parts := []string{"a", "Zz", " ", ",", "\t", ";", "\"", "\"\"", "\n", "\r\n", "\r", "é", "日本", "🚀", "\xEF\xBB\xBF", "x y", "'", "\\"}
	var b strings.Builder
	for range rng.IntN(6) {
		b.WriteString(parts[rng.IntN(len(parts))])
	}
	return b.String()
}

// Pos is a place in a text source: a line and a 1-based byte column.
type Pos struct {
	Line   int64
	Column int
}

// WriteCSV writes rows, the header first, as CSV (or, with delim '\t',
// TSV) text, each row ended by LF, quoting a field that must be (it holds
// the delimiter, a quote, CR or LF) and, when rng is not nil, a third of
// the others. It returns the text and, for each row, where each of its
// fields starts (its opening quote, if quoted) and, last, where its last
// field ends: the places a reader must report, counted on the bytes as
// they are written.
func WriteCSV(rng interface{ IntN(int) int }, rows [][]string, delim byte) (string, [][]Pos) {
	var b strings.Builder
	places := make([][]Pos, len(rows))
	line, col := int64(1), 1
	write := func(s string) {
		for i := range len(s) {
			if s[i] == '\n' {
				line, col = line+1, 1
			} else {
				col++
			}
		}
		b.WriteString(s)
	}
	for r, row := range rows {
		for i, f := range row {
			if i > 0 {
				write(string(delim))
			}
			places[r] = append(places[r], Pos{line, col})
			if strings.ContainsAny(f, string(delim)+"\"\r\n") || rng != nil && rng.IntN(3) == 0 {
				f = `"` + strings.ReplaceAll(f, `"`, `""`) + `"`
			}
			write(f)
		}
		places[r] = append(places[r], Pos{line, col})
		write("\n")
	}
	return b.String(), places
}
