package source

import "io"

// Rows is a Reader over rows held in memory, for tests and for callers that
// produce rows themselves.
type Rows struct {
	Header []string
	Data   [][]string
	i      int
	buf    [][]byte
}

// Columns implements Reader.
func (r *Rows) Columns() []string { return r.Header }

// Next implements Reader.
func (r *Rows) Next() ([][]byte, error) {
	if r.i >= len(r.Data) {
		return nil, io.EOF
	}
	row := r.Data[r.i]
	r.i++
	r.buf = r.buf[:0]
	for _, f := range row {
		r.buf = append(r.buf, []byte(f))
	}
	return r.buf, nil
}

// Line implements Reader: the 1-based row number plus one for a header.
func (r *Rows) Line() int64 { return int64(r.i) + 1 }

// Close implements Reader.
func (r *Rows) Close() error { return nil }
