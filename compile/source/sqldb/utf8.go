package sqldb

import (
	"fmt"
	"unicode/utf8"

	"github.com/lutkit/lutkit/compile/source"
)

// fields returns the fields of the row read into q.row.buf, or a
// *source.RowError for its first value that is not UTF-8 text, as the
// SQLite reader reports it: text holding invalid UTF-8 (text of a
// PostgreSQL SQL_ASCII database, or sent in a client character set
// other than UTF-8), or a binary string of bytes that are not text,
// whose error says how to select a text form of it. One utf8.Valid over
// the row's buffer checks a row that is UTF-8 text (source.ValidFields).
func (q *query) fields() ([][]byte, error) {
	fields := q.row.split()
	if source.ValidFields(q.row.buf, fields) {
		return fields, nil
	}
	for i, f := range fields {
		if utf8.Valid(f) {
			continue
		}
		col := q.columns[i]
		var err error
		if t := q.binary[i]; t != "" {
			err = fmt.Errorf("%s in column %q of the query, row %d, is not UTF-8 text: select a text form of it with --query (query in tables.yaml), such as %s",
				t, col, q.line, q.hexOf(col))
		} else {
			err = fmt.Errorf("invalid UTF-8 in column %q of the query, row %d", col, q.line)
		}
		return nil, &source.RowError{File: q.name, Line: q.line, Column: i + 1, Err: err}
	}
	return fields, nil // valid fields make a valid row: not reached
}
