package compile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/lutkit/lutkit/compile/source"
)

// scripted is a source.Reader that returns its rows and errors in turn.
type scripted struct {
	steps []any // []string (a row) or error
	i     int
	line  int64
}

func (s *scripted) Columns() []string { return []string{"k", "v"} }
func (s *scripted) Line() int64       { return s.line }
func (s *scripted) Close() error      { return nil }

func (s *scripted) Next() ([][]byte, error) {
	if s.i >= len(s.steps) {
		return nil, io.EOF
	}
	step := s.steps[s.i]
	s.line++
	if err, ok := step.(error); ok {
		if !source.Skippable(err) {
			return nil, err // sticky
		}
		s.i++
		return nil, err
	}
	s.i++
	var row [][]byte
	for _, f := range step.([]string) {
		row = append(row, []byte(f))
	}
	return row, nil
}

// TestFinalRowErrorNotSkipped: SkipBadRows skips a bad row but not a
// final row error (a fault the reader cannot go past), which fails the
// compile as the data error it is.
func TestFinalRowErrorNotSkipped(t *testing.T) {
	bad := &source.RowError{File: "s", Line: 2, Column: 1, Err: errors.New("bad row")}
	final := &source.RowError{File: "s", Line: 4, Column: 3, Err: errors.New("syntax"), Final: true}
	opts := Options{Key: []string{"k"}, SkipBadRows: true}

	st, err := Write(&scripted{steps: []any{[]string{"a", "1"}, bad, []string{"b", "2"}}}, tempFile(t), opts)
	if err != nil || st.SkippedRows != 1 || st.Rows != 2 {
		t.Fatalf("a bad row: %v, %+v", err, st)
	}
	_, err = Write(&scripted{steps: []any{[]string{"a", "1"}, bad, []string{"b", "2"}, final, []string{"c", "3"}}}, tempFile(t), opts)
	var se *SourceError
	var re *source.RowError
	if !errors.As(err, &se) || !errors.As(err, &re) || re != final {
		t.Fatalf("a final row error: %v", err)
	}
}

// tempFile is a file for Write to write a table to.
func tempFile(t *testing.T) *os.File {
	t.Helper()
	f, err := os.Create(filepath.Join(t.TempDir(), "t.lut"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}
