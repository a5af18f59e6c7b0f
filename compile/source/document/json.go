package document

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/lutkit/lutkit/compile/source"
)

// jsonReader reads a JSON document (a dictionary or an array of objects)
// or NDJSON, streaming: encoding/json's Decoder hands it one token at a
// time.
//
// NDJSON is read a line at a time, each line decoded on its own: every
// line is a JSON text, so a bad one is a bad row at its own line, and the
// next line is read as if it were not there.
type jsonReader struct {
	name   string
	ndjson bool
	nested string
	file   io.ReadCloser
	lc     *lineCounter // a JSON document: offsets to lines and columns
	dec    *json.Decoder
	// NDJSON: the file, the line being decoded (its number, its bytes and
	// a reader of them) and a buffer for lines longer than lines'.
	lines   *bufio.Reader
	lineNo  int64
	lineRd  bytes.Reader
	lineBuf []byte
	lineBad int64 // the offset of the line's first invalid UTF-8 byte, -1 if none
	// lineAt is where the line begins in what dec has read: one decoder
	// reads the lines one after the other, each fed to it alone, until
	// one fails (a decoder's errors stick); 0 for a JSON document.
	lineAt int64
	// What the decoder reads, for an error about invalid UTF-8: a
	// dictionary's key, a field name, or the value of field.
	at    readingWhat
	field string
	// shape is what the document turned out to be: '{' a dictionary, '['
	// an array, 'e' read to the end, 0 not started (and NDJSON).
	shape byte
	b     *rowBuilder
	types []string // ColumnTypes, from the first pass
	text  textEncoder
	line  int64
	rowAt int64 // the offset where the row last returned starts (ValuePos)
	err   error
}

// openJSON opens a JSON (or, with ndjson, NDJSON) file. Without a header
// in opts it reads the file once to find the columns, then again for the
// rows.
func openJSON(path string, opts source.Options, ndjson bool) (source.Reader, error) {
	if len(opts.Header) > 0 {
		return newJSONReader(path, opts, ndjson, opts.Header, false)
	}
	scan, err := newJSONReader(path, opts, ndjson, nil, true)
	if err != nil {
		return nil, err
	}
	for {
		_, err := scan.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil && !source.Skippable(err) {
			scan.Close()
			return nil, err
		}
	}
	columns, types := scan.b.columns, scan.b.columnTypes()
	if err := scan.Close(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(columns) == 0 {
		return nil, fmt.Errorf("%s: the document has no rows to take the columns from (give them as a header)", path)
	}
	r, err := newJSONReader(path, opts, ndjson, columns, false)
	if err != nil {
		return nil, err
	}
	r.types = types
	return r, nil
}

// ColumnTypes types the columns by the JSON values the first pass read
// (source.Typed): number, bool, or json where every value was of that
// kind (or null), text where any was a string. Read with a header (one
// pass), every column is text.
func (r *jsonReader) ColumnTypes() []string {
	if r.types == nil {
		return make([]string, len(r.b.columns))
	}
	return r.types
}

func newJSONReader(path string, opts source.Options, ndjson bool, columns []string, discover bool) (*jsonReader, error) {
	if err := source.CheckColumnNames(columns); err != nil && !discover {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	f, err := source.OpenText(path)
	if err != nil {
		return nil, err
	}
	r := &jsonReader{name: path, ndjson: ndjson, nested: opts.Nested, file: f, b: newRowBuilder(columns, discover)}
	if r.nested == "" {
		r.nested = source.NestedFlatten
	}
	br := bufio.NewReaderSize(f, 64<<10)
	skipBOM(br)
	if ndjson {
		r.lines = br
		return r, nil
	}
	r.lc = newLineCounter(br)
	r.dec = json.NewDecoder(r.lc)
	r.dec.UseNumber()
	return r, nil
}

// maxLine bounds the bytes of one NDJSON line.
const maxLine = 64 << 20

func (r *jsonReader) Columns() []string { return r.b.columns }

func (r *jsonReader) Line() int64 { return r.line }

var _ source.ValuePositioner = (*jsonReader)(nil)

// ValuePos places field i of the last row (source.ValuePositioner): where
// the field starts (its name), or a dictionary's entry its key.
func (r *jsonReader) ValuePos(i int) (line int64, column int) {
	return r.pos(r.b.at(i, r.rowAt))
}

func (r *jsonReader) Close() error {
	if r.file == nil {
		return nil
	}
	err := r.file.Close()
	r.file = nil
	if r.err == nil {
		r.err = errors.New("source: reader closed")
	}
	return err
}

func (r *jsonReader) Next() ([][]byte, error) {
	if r.err != nil {
		return nil, r.err
	}
	fields, err := r.next()
	if err != nil {
		if !source.Skippable(err) {
			r.err = err
		}
		return nil, err
	}
	return fields, nil
}

func (r *jsonReader) next() ([][]byte, error) {
	if r.ndjson {
		return r.nextLine()
	}
	if r.shape == 0 {
		if err := r.start(); err != nil {
			return nil, err
		}
	}
	if r.shape == 'e' {
		return nil, io.EOF
	}
	if !r.dec.More() {
		return nil, r.end()
	}
	return r.row()
}

// nextLine reads the row of the next NDJSON line that is not blank.
func (r *jsonReader) nextLine() ([][]byte, error) {
	for {
		line, err := r.readLine()
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimLeft(line, " \t\r")) == 0 {
			continue
		}
		r.lineBad = -1
		if !utf8.Valid(line) {
			r.lineBad = int64(firstInvalid(line))
		}
		if r.dec == nil {
			r.dec = json.NewDecoder(&r.lineRd)
			r.dec.UseNumber()
			r.lineAt = 0
		} else {
			// The previous line's object is read, and what is left of
			// the line is spaces, some in the decoder's buffer.
			r.lineAt = r.dec.InputOffset() + int64(r.dec.Buffered().(*bytes.Reader).Len())
		}
		r.lineRd.Reset(line)
		r.line = r.lineNo
		fields, err := r.row()
		if err != nil {
			r.dec = nil
			return nil, err
		}
		// The object is all the line holds.
		rest := bytes.TrimLeft(line[r.offset():], " \t\r")
		if len(rest) == 0 {
			return fields, nil
		}
		off := int64(len(line) - len(rest))
		r.at = readingNone
		defer func() { r.dec = nil }()
		tok, err := r.dec.Token()
		if uerr := r.utf8Error(err); uerr != nil {
			return nil, uerr
		}
		if err == nil {
			err = fmt.Errorf("%s after the row's object", kind(tok))
		}
		return nil, r.errorAt(off, err)
	}
}

// readLine returns the next line of an NDJSON file without its newline,
// valid until the next call, or io.EOF at the end.
func (r *jsonReader) readLine() ([]byte, error) {
	r.lineNo++
	r.lineBuf = r.lineBuf[:0]
	for {
		chunk, err := r.lines.ReadSlice('\n')
		if len(r.lineBuf)+len(chunk) > maxLine {
			r.line = r.lineNo
			return nil, &source.RowError{File: r.name, Line: r.lineNo, Err: fmt.Errorf("line longer than %d MiB", maxLine>>20), Final: true}
		}
		switch {
		case err == nil:
			if len(r.lineBuf) == 0 {
				return chunk[:len(chunk)-1], nil
			}
			r.lineBuf = append(r.lineBuf, chunk[:len(chunk)-1]...)
			return r.lineBuf, nil
		case errors.Is(err, bufio.ErrBufferFull):
			r.lineBuf = append(r.lineBuf, chunk...)
		case errors.Is(err, io.EOF):
			r.lineBuf = append(r.lineBuf, chunk...)
			if len(r.lineBuf) == 0 {
				return nil, io.EOF
			}
			return r.lineBuf, nil
		default:
			return nil, fmt.Errorf("%s: %w", r.name, err)
		}
	}
}

// row reads the next row: a dictionary's entry, an array's object or an
// NDJSON line's.
func (r *jsonReader) row() ([][]byte, error) {
	start := r.here()
	var key string
	r.at = readingNone
	if r.shape == '{' {
		r.at = readingKey
		t, err := r.token()
		if err != nil {
			return nil, err
		}
		key = t.(string) // the decoder allows only a string here
		r.at, r.field = readingValue, ValueColumn
	}
	tok, err := r.token()
	if err != nil {
		return nil, err
	}
	if r.lc != nil {
		r.lc.trim(start)
	}
	r.line, _ = r.pos(start)
	r.rowAt = start
	r.b.begin()
	obj := tok == json.Delim('{')
	switch {
	case r.shape == '{':
		r.b.set(KeyColumn, []byte(key), start)
		if obj {
			err = r.object("", 1)
		} else {
			err = r.value(ValueColumn, tok, 1, start)
		}
	case obj:
		err = r.object("", 1)
	default:
		r.b.fail(start, "the row is %s, not an object", kind(tok))
		err = r.value("", tok, 1, start) // read past it
	}
	if err != nil {
		return nil, err
	}
	if r.b.err != nil {
		line, col := r.pos(r.b.errOff)
		r.line = line
		// Too many columns: the document is not a table, and reading ends.
		final := errors.Is(r.b.err, errTooManyColumns)
		return nil, &source.RowError{File: r.name, Line: line, Column: col, Err: r.b.err, Final: final}
	}
	return r.b.finish(), nil
}

// start reads the opening of the document.
func (r *jsonReader) start() error {
	r.dec.More() // fills the buffer, for here
	off := r.here()
	r.at = readingNone
	tok, err := r.dec.Token()
	if uerr := r.utf8Error(err); uerr != nil {
		return uerr
	}
	if errors.Is(err, io.EOF) {
		return fmt.Errorf("%s: the document is empty", r.name)
	}
	if err != nil {
		return r.errorAt(r.here(), err)
	}
	switch tok {
	case json.Delim('{'), json.Delim('['):
		r.shape = byte(tok.(json.Delim))
		return nil
	}
	return r.errorAt(off, fmt.Errorf("the document is %s; want an object (a dictionary) or an array of objects", kind(tok)))
}

// end reads the end of the document, after the last row.
func (r *jsonReader) end() error {
	if _, err := r.token(); err != nil { // the closing '}' or ']'
		return err
	}
	off := r.here()
	r.at = readingNone
	tok, err := r.dec.Token()
	if uerr := r.utf8Error(err); uerr != nil {
		return uerr
	}
	switch {
	case errors.Is(err, io.EOF):
		r.shape = 'e'
		return io.EOF
	case err != nil:
		return r.errorAt(r.here(), err)
	}
	return r.errorAt(off, fmt.Errorf("%s after the end of the document", kind(tok)))
}

// object reads the fields of an object whose '{' has been read, each to
// the column named by its path under prefix.
func (r *jsonReader) object(prefix string, depth int) error {
	if depth > maxDepth {
		return r.errorAt(r.offset()-1, errTooDeep) // at the '{'
	}
	for r.dec.More() {
		r.at = readingName
		t, err := r.token()
		if err != nil {
			return err
		}
		key := t.(string) // the decoder allows only a string here
		// Where the key starts (exact unless it has escapes).
		off := r.offset() - int64(len(key)) - 2
		name := join(prefix, key)
		r.at, r.field = readingValue, name
		v, err := r.token()
		if err != nil {
			return err
		}
		if err := r.value(name, v, depth, off); err != nil {
			return err
		}
	}
	_, err := r.token() // '}'
	return err
}

// value reads the value whose first token is tok into column name.
func (r *jsonReader) value(name string, tok json.Token, depth int, off int64) error {
	switch v := tok.(type) {
	case json.Delim:
		if v == '{' && r.nested == source.NestedFlatten {
			return r.object(name, depth+1)
		}
		if err := r.encode(v); err != nil {
			return err
		}
		r.b.setKind(name, r.text.buf, off, kindJSON)
	case string:
		r.b.set(name, []byte(v), off)
	case json.Number:
		r.b.setKind(name, []byte(v), off, kindNumber)
	case bool:
		if v {
			r.b.setKind(name, []byte("true"), off, kindBool)
		} else {
			r.b.setKind(name, []byte("false"), off, kindBool)
		}
	case nil:
		r.b.setKind(name, nil, off, 0)
	}
	return nil
}

// encode reads the object or array that starts with open as JSON text
// into r.text.
func (r *jsonReader) encode(open json.Delim) error {
	e := &r.text
	e.reset()
	tok := json.Token(open)
	for {
		switch v := tok.(type) {
		case json.Delim:
			if v == '{' || v == '[' {
				if err := e.open(byte(v)); err != nil {
					return r.errorAt(r.offset()-1, err) // at the delimiter
				}
			} else if e.close() {
				return nil
			}
		case string:
			e.str(v)
		case json.Number:
			e.literal(string(v))
		case bool:
			if v {
				e.literal("true")
			} else {
				e.literal("false")
			}
		case nil:
			e.literal("null")
		}
		var err error
		if tok, err = r.token(); err != nil {
			return err
		}
	}
}

// token returns the next token; the end of the input is an error here.
func (r *jsonReader) token() (json.Token, error) {
	t, err := r.dec.Token()
	if uerr := r.utf8Error(err); uerr != nil {
		return nil, uerr
	}
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, r.errorAt(r.here(), err)
	}
	return t, nil
}

// readingWhat is what the decoder reads, for an error about invalid
// UTF-8.
type readingWhat uint8

const (
	readingNone  readingWhat = iota
	readingKey               // a dictionary's key
	readingName              // a field name
	readingValue             // the value of jsonReader.field
)

// utf8Error returns the error for the invalid UTF-8 the decoder has read
// into (a string, whose bad bytes it replaced with U+FFFD) or stopped at
// (the syntax error err), placed at the first bad byte; nil if it has not
// reached any. JSON text is UTF-8: for NDJSON the line is a bad row, and a
// JSON document fails.
func (r *jsonReader) utf8Error(err error) error {
	bad := r.lineBad
	if !r.ndjson {
		bad = r.lc.bad
	}
	if bad < 0 {
		return nil
	}
	if err == nil && bad >= r.offset() {
		return nil
	}
	if err != nil {
		// Where the syntax error is: a token error is at the decoder's
		// offset; one of a value the decoder scans is counted from the
		// value's start, where the decoder's offset stays.
		var se *json.SyntaxError
		if !errors.As(err, &se) {
			return nil
		}
		at := se.Offset
		if off := r.offset(); at != off {
			at = off + se.Offset - 1
		}
		if bad > at {
			return nil // a syntax error before the bad byte
		}
	}
	msg := "invalid UTF-8"
	switch r.at {
	case readingKey:
		msg += " in the key"
	case readingName:
		msg += " in a field name"
	case readingValue:
		msg += fmt.Sprintf(" in field %q", r.field)
	}
	return r.errorAt(bad, errors.New(msg))
}

// firstInvalid returns the offset of the first byte of b that is not
// part of a valid UTF-8 character, or -1.
func firstInvalid(b []byte) int {
	for i := 0; i < len(b); {
		if b[i] < utf8.RuneSelf {
			i++
			continue
		}
		c, size := utf8.DecodeRune(b[i:])
		if c == utf8.RuneError && size == 1 {
			return i
		}
		i += size
	}
	return -1
}

// offset is the decoder's input offset: in the line, for NDJSON.
func (r *jsonReader) offset() int64 { return r.dec.InputOffset() - r.lineAt }

// here returns the offset of the next token: the decoder's offset past
// the spaces and the separator it has not consumed yet (as far as its
// buffer shows).
func (r *jsonReader) here() int64 {
	off := r.offset()
	br, ok := r.dec.Buffered().(io.ByteReader)
	if !ok {
		return off
	}
	sep := false
	for {
		c, err := br.ReadByte()
		if err != nil {
			return off
		}
		switch {
		case c == ' ' || c == '\t' || c == '\r' || c == '\n':
		case !sep && (c == ',' || c == ':'):
			sep = true
		default:
			return off
		}
		off++
	}
}

// errorAt places err at offset off of the file (of the line, for
// NDJSON): a *source.RowError, final for a JSON document, which cannot be
// read past it, but not for an NDJSON line. An error reading the file (a
// failed read, bad gzip data) only names the file.
func (r *jsonReader) errorAt(off int64, err error) error {
	var re *readError
	if errors.As(err, &re) {
		return fmt.Errorf("%s: %w", r.name, re.err)
	}
	line, col := r.pos(off)
	r.line = line
	return &source.RowError{File: r.name, Line: line, Column: col, Err: err, Final: !r.ndjson}
}

// pos returns the line and byte column of offset off of the input the
// decoder reads: the file, or for NDJSON the line.
func (r *jsonReader) pos(off int64) (line int64, col int) {
	if r.ndjson {
		return r.lineNo, int(off) + 1
	}
	return r.lc.pos(off)
}

// kind names the kind of value tok starts.
func kind(tok json.Token) string {
	switch v := tok.(type) {
	case json.Delim:
		if v == '[' {
			return "an array"
		}
		if v == '{' {
			return "an object"
		}
		return fmt.Sprintf("%q", string(v))
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return "a value"
}
