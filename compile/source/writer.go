package source

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/lutkit/lutkit/internal/jsonstr"
)

// NewWriter returns a Writer that writes rows with the given columns to w
// in format "csv", "tsv", "jsonl" or "parquet".
//
// CSV and TSV follow RFC 4180: a header row first, then one line per row
// ending in "\n"; a field is quoted only when it contains the delimiter, a
// quote, CR or LF (and, so that reading it back gives the same values,
// when it is the only, empty, field of a row, or starts the output with a
// byte order mark). Reading the output with NewCSVReader yields the same
// bytes in every field.
//
// JSON lines has one object per row, keys in column order, every value a
// string, escaped by jsonstr (as every JSON of the project). JSON strings
// hold only UTF-8, so each invalid UTF-8 byte is written as U+FFFD; apart
// from that the values round-trip.
//
// Parquet has one required UTF8 (string) column per column, written in row
// groups of 65536 rows, so memory stays bounded; the bytes of each value
// are stored as they are.
func NewWriter(format string, w io.Writer, columns []string) (Writer, error) {
	if len(columns) == 0 {
		return nil, errors.New("an output needs at least one column")
	}
	switch format {
	case "csv", "tsv":
		delim := byte(',')
		if format == "tsv" {
			delim = '\t'
		}
		cw := &csvWriter{bw: bufio.NewWriterSize(w, 256<<10), delim: delim, ncol: len(columns), first: true}
		header := make([][]byte, len(columns))
		for i, c := range columns {
			header[i] = []byte(c)
		}
		if err := cw.Write(header); err != nil {
			return nil, err
		}
		return cw, nil
	case "jsonl":
		return newJSONLWriter(w, columns), nil
	default:
		if nw, ok := writers[format]; ok {
			return nw(w, columns)
		}
	}
	return nil, fmt.Errorf("unknown output format %q (want csv, tsv, jsonl or parquet)", format)
}

// CheckFieldCount is the error a Writer returns for a row of the wrong
// width.
func CheckFieldCount(got, want int) error {
	if got != want {
		return fmt.Errorf("source: row has %d fields, want %d", got, want)
	}
	return nil
}

// csvWriter writes RFC 4180 CSV or TSV.
type csvWriter struct {
	bw    *bufio.Writer
	delim byte
	ncol  int
	first bool // nothing written yet
}

func (w *csvWriter) Write(fields [][]byte) error {
	if err := CheckFieldCount(len(fields), w.ncol); err != nil {
		return err
	}
	for i, f := range fields {
		if i > 0 {
			w.bw.WriteByte(w.delim)
		}
		if w.needsQuotes(f, len(fields)) {
			w.bw.WriteByte('"')
			for {
				j := bytes.IndexByte(f, '"')
				if j < 0 {
					break
				}
				w.bw.Write(f[:j+1])
				w.bw.WriteByte('"')
				f = f[j+1:]
			}
			w.bw.Write(f)
			w.bw.WriteByte('"')
		} else {
			w.bw.Write(f)
		}
		w.first = false
	}
	_, err := w.bw.Write([]byte{'\n'})
	return err
}

func (w *csvWriter) needsQuotes(f []byte, n int) bool {
	if len(f) == 0 {
		// A row of one empty field would be a blank line.
		return n == 1
	}
	if w.first && bytes.HasPrefix(f, utf8BOM) {
		return true
	}
	for _, c := range f {
		if c == w.delim || c == '"' || c == '\r' || c == '\n' {
			return true
		}
	}
	return false
}

func (w *csvWriter) Close() error { return w.bw.Flush() }

// jsonlWriter writes one JSON object per row.
type jsonlWriter struct {
	bw   *bufio.Writer
	keys [][]byte // `{"name":` for the first column, `,"name":` after
	buf  []byte
}

func newJSONLWriter(w io.Writer, columns []string) *jsonlWriter {
	jw := &jsonlWriter{bw: bufio.NewWriterSize(w, 256<<10), keys: make([][]byte, len(columns))}
	for i, c := range columns {
		k := []byte{','}
		if i == 0 {
			k[0] = '{'
		}
		k = jsonstr.AppendStringS(k, c)
		jw.keys[i] = append(k, ':')
	}
	return jw
}

func (w *jsonlWriter) Write(fields [][]byte) error {
	if err := CheckFieldCount(len(fields), len(w.keys)); err != nil {
		return err
	}
	b := w.buf[:0]
	for i, f := range fields {
		b = append(b, w.keys[i]...)
		b = jsonstr.AppendString(b, f)
	}
	b = append(b, '}', '\n')
	w.buf = b
	_, err := w.bw.Write(b)
	return err
}

func (w *jsonlWriter) Close() error { return w.bw.Flush() }
