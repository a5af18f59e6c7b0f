package compile

import (
	"fmt"

	"github.com/lutkit/lutkit/compile/source"
)

// Errors about a field's value are placed in the source as the source
// can: a CSV or TSV file (a source.FieldPositioner) at the line and byte
// column where the field starts, as its reader places its own errors;
// another source at the row's line and the field's number. Rows are
// checked after the source has moved past them (rows.go), so the row
// being written (row, in batch) carries what places its fields.

// rowAt is the row being written: its batch, its row and its fields.
type rowAt struct {
	batch  *rowBatch
	row    *batchRow
	fields [][]byte
}

// fieldError returns err, about field i (a source column index) of the
// row being written, which starts at line, as a *source.RowError placed
// at the field.
func (c *compiler) fieldError(line int64, i int, err error) *source.RowError {
	col := i + 1
	if c.positioned && c.cur.row != nil {
		line, col = c.cur.batch.fieldPos(c.cur.row, c.cur.fields, i)
	}
	return &source.RowError{File: c.opts.SourceName, Line: line, Column: col, Err: err}
}

// laterColumn is the column of an error about field i (a source column
// index) of a row found once the source has been read (a duplicate key,
// overlapping ranges): the field's number; in a source with byte
// positions, where the row's bytes are gone, column 1 for the first
// field, which starts the row's line, and 0 (the row's line alone) for
// another.
func (c *compiler) laterColumn(i int) int {
	switch {
	case !c.positioned:
		return i + 1
	case i == 0:
		return 1
	}
	return 0
}

// A row of a source that places its values (source.ValuePositioner: JSON,
// NDJSON and YAML documents, whose rows may share a line) is kept, in its
// entry, at the place of its first key field: its line and byte column in
// one int64, which orders the rows as the source does, rows on one line
// too. A row of another source is kept at its line.

// packPlace packs a line and a byte column into one int64 that orders
// places as the source does: lines up to 2^31, columns up to 2^32 - 1
// (a column past it counts as that one).
func packPlace(line int64, column int) int64 {
	return line<<32 | int64(min(uint64(column), 1<<32-1)) //nolint:gosec // a column is not negative
}

// laterPlace returns where to place an error about field i (a source
// column index) of the row kept at at (entry.at), found once the source
// has been read: in a source that places its values, the place of the
// row's first key field, or its line alone for another field; otherwise
// the row's line and laterColumn.
func (c *compiler) laterPlace(at int64, i int) (line int64, column int) {
	if !c.valuesPlaced {
		return at, c.laterColumn(i)
	}
	line, column = at>>32, int(at&(1<<32-1))
	if i != c.keyIdx[0] {
		column = 0
	}
	return line, column
}

// place writes a position in the source as a *source.RowError does:
// file:line:column, or file:line when column is 0.
func place(file string, line int64, column int) string {
	if column > 0 {
		return fmt.Sprintf("%s:%d:%d", file, line, column)
	}
	return fmt.Sprintf("%s:%d", file, line)
}
