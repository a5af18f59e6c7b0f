package document

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/lutkit/lutkit/compile/source"
)

// jsonReader reads a JSON document (a dictionary or an array of objects)
// or NDJSON, streaming: encoding/json's Decoder hands it one token at a
// time.
type jsonReader struct {
	name   string
	ndjson bool
	nested string
	file   io.ReadCloser
	lc     *lineCounter
	dec    *json.Decoder
	// shape is what the document turned out to be: '{' a dictionary, '['
	// an array, 'n' NDJSON, 'e' read to the end, 0 not started.
	shape byte
	b     *rowBuilder
	types []string // ColumnTypes, from the first pass
	text  textEncoder
	line  int64
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
	r.lc = newLineCounter(f)
	r.dec = json.NewDecoder(r.lc)
	r.dec.UseNumber()
	return r, nil
}

func (r *jsonReader) Columns() []string { return r.b.columns }

func (r *jsonReader) Line() int64 { return r.line }

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
	start := r.here()
	var key string
	if r.shape == '{' {
		t, err := r.token()
		if err != nil {
			return nil, err
		}
		key = t.(string) // the decoder allows only a string here
	}
	tok, err := r.token()
	if err != nil {
		return nil, err
	}
	r.lc.trim(start)
	r.line, _ = r.lc.pos(start)
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
		line, col := r.lc.pos(r.b.errOff)
		r.line = line
		// Too many columns: the document is not a table, and reading ends.
		final := errors.Is(r.b.err, errTooManyColumns)
		return nil, &source.RowError{File: r.name, Line: line, Column: col, Err: r.b.err, Final: final}
	}
	return r.b.finish(), nil
}

// start reads the opening of the document.
func (r *jsonReader) start() error {
	if r.ndjson {
		r.shape = 'n'
		return nil
	}
	r.dec.More() // fills the buffer, for here
	off := r.here()
	tok, err := r.dec.Token()
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
	if r.shape != 'n' {
		if _, err := r.token(); err != nil { // the closing '}' or ']'
			return err
		}
	}
	off := r.here()
	tok, err := r.dec.Token()
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
		return r.errorAt(r.dec.InputOffset()-1, errTooDeep) // at the '{'
	}
	for r.dec.More() {
		t, err := r.token()
		if err != nil {
			return err
		}
		key := t.(string) // the decoder allows only a string here
		// Where the key starts (exact unless it has escapes).
		off := r.dec.InputOffset() - int64(len(key)) - 2
		v, err := r.token()
		if err != nil {
			return err
		}
		if err := r.value(join(prefix, key), v, depth, off); err != nil {
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
					return r.errorAt(r.dec.InputOffset()-1, err) // at the delimiter
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
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, r.errorAt(r.here(), err)
	}
	return t, nil
}

// here returns the offset of the next token: the decoder's offset past
// the spaces and the separator it has not consumed yet (as far as its
// buffer shows).
func (r *jsonReader) here() int64 {
	off := r.dec.InputOffset()
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

// errorAt places err at offset off of the file: a final *source.RowError,
// as the document cannot be read past it. An error reading the file (a
// failed read, bad gzip data) only names the file.
func (r *jsonReader) errorAt(off int64, err error) error {
	var re *readError
	if errors.As(err, &re) {
		return fmt.Errorf("%s: %w", r.name, re.err)
	}
	line, col := r.lc.pos(off)
	r.line = line
	return &source.RowError{File: r.name, Line: line, Column: col, Err: err, Final: true}
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
