package source

// FieldPositioner is implemented by the Readers that know where in their
// text each field of a row starts: the CSV reader (CSV and TSV files).
// The readers of SQLite, Parquet, Arrow and SQL databases have no byte
// positions, and those of JSON, NDJSON and YAML documents know where each
// field is but not the text between (ValuePositioner); they do not
// implement it.
//
// Positions are a line and a 1-based byte column: a column counts bytes,
// not characters, from the start of the line (after a byte order mark,
// on the first line), so a field after "café," starts at column 7.
type FieldPositioner interface {
	// FieldPos returns the line and the byte column where field i of the
	// row last returned by Next starts (at its opening quote, for a quoted
	// field, which may be on a later line than the row's first when a
	// quoted field before it holds a line break). For i equal to the
	// row's number of fields, it returns where a field after the last
	// would start. It is valid until the next call to Next.
	FieldPos(i int) (line int64, column int)
	// AppendQuoted appends to dst the set of the quoted fields of the row
	// last returned by Next, one bit a field (field i is bit i%64 of word
	// i/64; words past the end are zero), and returns it. For a row
	// without quoted fields it appends nothing. With the row's fields and
	// its line, the set is what FieldPosOf needs to place the row's fields
	// once the reader has moved on: a caller that keeps rows past the
	// next call to Next keeps it at read time.
	AppendQuoted(dst []uint64) []uint64
}

// FieldPosOf returns the line and the byte column where field i of a row
// of a FieldPositioner starts, as FieldPos returned them while the row was
// the reader's last: from the row's fields as Next returned them, the
// line it starts on (Reader.Line) and the set of its quoted fields
// (FieldPositioner.AppendQuoted; nil for none). It computes the position
// from the fields: a quoted field is its opening quote, its text with
// each quote doubled, its line breaks kept, and its closing quote, and
// one byte, the delimiter, separates two fields.
func FieldPosOf(fields [][]byte, line int64, quoted []uint64, i int) (int64, int) {
	col := 1
	n := min(i, len(fields))
	for j, f := range fields[:n] {
		if w := j / 64; w >= len(quoted) || quoted[w]&(1<<(j%64)) == 0 {
			col += len(f) + 1 // an unquoted field is on one line, as it is
			continue
		}
		col++ // the opening quote
		for _, c := range f {
			switch c {
			case '\n':
				line, col = line+1, 1
			case '"':
				col += 2
			default:
				col++
			}
		}
		col += 2 // the closing quote and the delimiter
	}
	if n > 0 && n == len(fields) {
		col-- // past the last field, which no delimiter follows
	}
	return line, col
}

// ValuePositioner is implemented by the Readers of JSON, NDJSON and YAML
// documents, which know where each field of a row is, in any order and
// with any text between, so that a caller can place a row by one of its
// fields once the reader has moved on (compile keeps each row at the
// place of its key, which orders the rows that share a line and places a
// duplicate key). Positions are a line and a 1-based byte column, as
// FieldPositioner's.
type ValuePositioner interface {
	// ValuePos returns the line and the byte column of field i of the row
	// last returned by Next: in JSON and NDJSON where the field starts
	// (its name, or a dictionary's key), in YAML where its value starts;
	// where the row starts when the row gives field i no value. It is
	// valid until the next call to Next.
	ValuePos(i int) (line int64, column int)
}
