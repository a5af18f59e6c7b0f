// Package source reads tabular sources row by row for the compiler: CSV and
// TSV files (plain or gzip, or standard input), and through the format
// packages that register themselves, SQLite tables and queries, Parquet
// and Arrow IPC files (columnar), JSON, NDJSON and YAML documents
// (document) and PostgreSQL and MySQL queries (sqldb). It also writes rows
// back out (CSV, JSON lines, Parquet) for "lut export".
//
// Readers stream: they hold one row at a time, never the whole source, so a
// 50-million-row file compiles in bounded memory. Every value is handed over
// in its text form as bytes.
//
// The CSV reader is the one CSV parser of the compilers: compile/iptable
// reads its CSV sources through CSVRecords (the same dialect and errors,
// the header and field count left to the caller) and its address lists
// through OpenText. Bad rows are reported as *RowError, the one row error
// of the compilers. Options is the serialisable spec of a source (see
// Options.Validate).
package source

import (
	"errors"
	"fmt"
	"unicode/utf8"
)

// Reader yields the rows of one source, in source order.
//
// A Reader is not safe for concurrent use.
type Reader interface {
	// Columns returns the column names, from the header row, the
	// Options.Header list, or the source's schema.
	Columns() []string
	// Next returns the next row, one field per column. The slices alias
	// the reader's buffers and are valid only until the next call to Next.
	// At the end of the source it returns io.EOF. A row that is wrong
	// (wrong number of fields, invalid UTF-8) is reported as a *RowError;
	// the caller may then call Next again to continue with the next row.
	// Any other error, and a *RowError marked Final, is final (see
	// Skippable).
	Next() ([][]byte, error)
	// Line returns the 1-based line number (for CSV, JSON, NDJSON and
	// YAML, the line on which the last returned row starts, or for a bad
	// row the line of its fault; for other sources, the row number) of
	// the row last returned by Next.
	Line() int64
	// Close releases the source.
	Close() error
}

// Typed is implemented by the readers of sources that declare their
// columns' types: PostgreSQL and MySQL queries (the result's column types),
// Parquet and Arrow files (the schema's field types), and JSON and NDJSON
// documents read without a header (the kinds of value each column holds). ColumnTypes
// returns, for each column of Columns, the column type of a .lut table
// its values are (format.ParseColumnType's names: "number", "bool" or
// "json"), or "" where they are text. The compiler uses it for
// compile.Options.SourceTypes.
type Typed interface {
	ColumnTypes() []string
}

// RowError describes a bad row or record: it names the file, the line
// and, where one field is at fault, the column. It is the one row error
// of the compilers: source readers, compile and compile/iptable all
// report bad rows with it.
//
// Column is 1-based, and 0 when the whole row is at fault. Where the
// source is text it is a byte column, as editors read file:line:column: it
// counts bytes, not characters, from the start of the line (a field after
// "café," starts at column 7). So it is for the errors of the CSV reader
// (CSV and TSV: where the field at fault starts, at its opening quote for
// a quoted field; for a row short of fields, just past its last field),
// of the JSON, NDJSON and YAML readers (where the fault is), of
// compile/iptable, and of package compile about a field's value in a CSV
// or TSV source, which it places through FieldPositioner. A quoted field
// holding a line break puts the fields after it on a later line than the
// row's first: Line is then the line where the field at fault starts.
//
// Column is the number of the field at fault (file:3:2 is the second
// field of row 3) for the errors of the readers without byte positions
// (SQLite, Parquet, Arrow, PostgreSQL and MySQL) and for package
// compile's errors about a field's value in any source but CSV and TSV
// (those, and JSON, NDJSON and YAML documents).
//
// Package compile finds some faults only once the source has been read
// (a duplicate key, overlapping ranges), when the bytes of a CSV or TSV
// row are gone: it places them at column 1 when the field at fault is the
// row's first, which starts its line, and at the row's line alone (Column
// 0) otherwise. In a JSON, NDJSON or YAML document (a ValuePositioner) it
// places them at the line and byte column of the row's first key field
// (ValuePos), and at that line alone when the field at fault is another.
//
// Final marks a fault the reader cannot go past, as a syntax error in a
// JSON array ends the document: the error is still placed in the source
// (a data error, not an I/O error), but reading ends with it and a
// compile fails on it even when it skips bad rows.
type RowError struct {
	File   string
	Line   int64
	Column int // 0 when the whole row is at fault
	Err    error
	Final  bool
}

func (e *RowError) Error() string {
	if e.Column > 0 {
		return fmt.Sprintf("%s:%d:%d: %v", e.File, e.Line, e.Column, e.Err)
	}
	return fmt.Sprintf("%s:%d: %v", e.File, e.Line, e.Err)
}

// Unwrap returns the cause.
func (e *RowError) Unwrap() error { return e.Err }

// Skippable reports whether err is a bad row that reading can go on
// past: a *RowError that is not Final.
func Skippable(err error) bool {
	var re *RowError
	return errors.As(err, &re) && !re.Final
}

// Writer writes rows of a fixed set of columns in one output format.
type Writer interface {
	// Write writes one row, one field per column.
	Write(fields [][]byte) error
	// Close flushes buffered output (it does not close the underlying
	// io.Writer).
	Close() error
}

// SplitFields sets fields[i] to the bytes of buf between ends[i-1] (0 for
// the first) and ends[i], each capped at its end so that appending to one
// field cannot overwrite the next. Readers that build a whole row in one
// buffer use it to hand out the row's fields.
func SplitFields(fields [][]byte, buf []byte, ends []int) {
	start := 0
	for i, e := range ends {
		fields[i] = buf[start:e:e]
		start = e
	}
}

// ValidFields reports whether each of fields, the fields SplitFields made
// of buf, is UTF-8 text: buf is, and no field starts inside a character.
// (buf alone is not enough: a field that ends with the first byte of a
// character and a next one that starts with its last byte make a valid
// buf of two invalid fields.) It costs one utf8.Valid over the row.
func ValidFields(buf []byte, fields [][]byte) bool {
	if !utf8.Valid(buf) {
		return false
	}
	for _, f := range fields {
		if len(f) > 0 && !utf8.RuneStart(f[0]) {
			return false
		}
	}
	return true
}
