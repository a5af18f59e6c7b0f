package source

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"
)

const (
	// csvBufSize is the initial size of the CSV read buffer.
	csvBufSize = 1 << 20
	// maxRecordSize bounds the bytes one CSV record may occupy. The read
	// buffer grows up to this size for records longer than csvBufSize.
	maxRecordSize = 64 << 20
)

var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// csvReader is a streaming RFC 4180 reader. It parses records in place in
// a large read buffer: fields without doubled quotes are sub-slices of the
// buffer, the others are unescaped into a reused scratch buffer, so that
// reading a row allocates nothing once the buffers have grown.
type csvReader struct {
	name    string
	src     io.Reader
	closers []io.Closer

	buf []byte // read buffer; unread input is buf[pos:end]
	pos int
	end int
	// quote is the offset in buf of the first '"' at or after pos, or
	// end if there is none; it is recomputed when it falls behind pos.
	// A negative value means unknown.
	quote int
	eof   bool  // src is exhausted
	rerr  error // read error to report once the data before it is used
	err   error // sticky final error (or io.EOF)

	delim   byte
	noQuote bool // Options.Quote "none": a quote is text, a record a line
	columns []string
	fields  [][]byte
	rec     []byte // unescaped quoted fields of the current record

	line    int64 // line number of buf[pos]
	rowLine int64 // line on which the last returned row starts
	errLine int64 // line of the fault of the last row, if it was bad (Line)

	// records mode (CSVRecords): no header, any number of fields, blank
	// lines skipped.
	records bool
	// Where the fields of the last record start, for fieldPos: the
	// record's offset in buf, and whether it was one line without quotes
	// (plain) or else each field's offset from recStart (starts). quoted
	// is the set of its quoted fields (AppendQuoted), empty for none.
	recStart int
	plain    bool
	starts   []int
	quoted   []uint64

	// Blank lines already consumed but not yet returned (see nextBlank).
	blankPending int64
	blankLine    int64

	// firstDone: records mode has returned its first record, whose line
	// ends are checked as a header's are (lineEndInHeader).
	firstDone bool
}

var _ FieldPositioner = (*csvReader)(nil)

// syntaxErr is the first syntax problem found in a record: its message
// and the field at fault (1-based).
type syntaxErr struct {
	col int
	msg string
}

// NewCSVReader returns a Reader for CSV or TSV data read from r, which is
// decompressed when name ends in ".gz" or the data starts with the gzip
// magic bytes. The name is used in error messages (and, when
// opts.Format is empty, to choose the delimiter: ".tsv" and ".tab" mean
// tab). The header row is read before NewCSVReader returns; a header that
// is missing or blank, holds invalid UTF-8 or repeats a name is an error,
// a *RowError at line 1 (and the byte column of the name at fault).
// Close does not close r.
//
// The dialect is RFC 4180: fields may be quoted, a quote inside a quoted
// field is doubled, quoted fields may hold the delimiter, CR and LF (kept
// as they are), and lines end in LF or CRLF. A UTF-8 byte order mark at
// the start is skipped. Blank lines at the end are ignored; a blank line
// elsewhere is a row with one empty field, which is an error unless the
// table has a single column.
//
// TSV (a tab delimiter) is read the same way, but for a quote inside an
// unquoted field, which is an ordinary character there: TSV (IANA
// text/tab-separated-values) has no quoting, so its files hold quotes as
// text (say "hi"), while tab-separated files written with CSV's quoting
// (lut export, spreadsheets) quote a whole field, from its first byte.
//
// With opts.Quote "none" a quote is an ordinary character everywhere, even
// at the start of a field ("hi" is read with its quotes), and a record is
// one line: a field cannot hold the delimiter or a line break.
//
// Bad rows are reported as *RowError: a wrong number of fields, invalid
// UTF-8, a bare quote in an unquoted CSV field, or text after a closing
// quote; reading continues with the next row. The error is placed at the
// line and byte column where the field at fault starts (its opening quote,
// for a quoted field; the first field too many, or where the first one
// missing would start), as FieldPos places fields. The reader is a
// FieldPositioner. An unterminated quoted field swallows the rest of the
// input, so the next call to Next after it returns io.EOF. A record longer
// than 64 MiB and read errors are final errors.
func NewCSVReader(r io.Reader, name string, opts Options) (Reader, error) {
	cr, err := newCSVReader(r, name, opts, nil)
	if err != nil {
		return nil, err
	}
	return cr, nil
}

func newCSVReader(r io.Reader, name string, opts Options, closer io.Closer) (*csvReader, error) {
	return newCSVReaderSize(r, name, opts, closer, csvBufSize)
}

// newCSVReaderSize is newCSVReader with an initial buffer of bufSize
// bytes (tests use tiny buffers to exercise refilling).
func newCSVReaderSize(r io.Reader, name string, opts Options, closer io.Closer, bufSize int) (*csvReader, error) {
	return newCSVReaderMode(r, name, opts, closer, bufSize, false)
}

// newCSVReaderMode is newCSVReaderSize, in records mode (see CSVRecords)
// when records is set.
func newCSVReaderMode(r io.Reader, name string, opts Options, closer io.Closer, bufSize int, records bool) (*csvReader, error) {
	delim, err := csvDelimiter(name, opts)
	if err != nil {
		if closer != nil {
			closer.Close()
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	cr := &csvReader{name: name, delim: delim, noQuote: opts.Quote == QuoteNone, line: 1, quote: -1, records: records}
	if closer != nil {
		cr.closers = append(cr.closers, closer)
	}
	src, zr, err := decompressed(r, name, min(bufSize, 64<<10))
	if err != nil {
		cr.Close()
		return nil, err
	}
	if zr != nil {
		cr.closers = append([]io.Closer{zr}, cr.closers...)
	}
	cr.src = src
	cr.buf = make([]byte, max(bufSize, 4))
	if err := cr.readHeader(opts.Header); err != nil {
		cr.Close()
		return nil, err
	}
	return cr, nil
}

// csvDelimiter picks the field delimiter from the options and the name.
func csvDelimiter(name string, opts Options) (byte, error) {
	d := opts.Delimiter
	if d == 0 {
		format := opts.Format
		if format == "" {
			format, _ = formatFromName(name)
		}
		if format == "tsv" {
			return '\t', nil
		}
		return ',', nil
	}
	if err := d.Validate(); err != nil {
		return 0, err
	}
	return byte(d), nil
}

// readHeader strips a byte order mark and sets up the columns, from the
// first record or from names (in records mode, it only strips the mark).
func (r *csvReader) readHeader(names []string) error {
	for r.end < len(utf8BOM) && !r.eof {
		if err := r.fill(); err != nil {
			return err
		}
	}
	if bytes.HasPrefix(r.buf[:r.end], utf8BOM) {
		r.pos = len(utf8BOM)
	}
	if r.records {
		return nil // the caller reads the first record itself
	}
	if len(names) > 0 {
		if err := CheckColumnNames(names); err != nil {
			return fmt.Errorf("%s: %w", r.name, err)
		}
		r.columns = append([]string(nil), names...)
		return nil
	}
	blank, err := r.atBlankLine()
	if err != nil {
		return err
	}
	if blank || (r.pos == r.end && r.eof) {
		return &RowError{File: r.name, Line: 1, Err: errors.New("empty header"), Final: true}
	}
	next, lines, serr, err := r.parse()
	if err != nil {
		return err
	}
	start := r.pos // parse may have moved the record to the front
	r.recStart, r.rowLine = start, r.line
	if serr.msg != "" {
		return r.fieldError(serr.col-1, errors.New(serr.msg))
	}
	if !utf8.Valid(r.buf[start:next]) {
		for i, f := range r.fields {
			if !utf8.Valid(f) {
				return r.fieldError(i, fmt.Errorf("invalid UTF-8 in column name %d", i+1))
			}
		}
	}
	if err := r.lineEndInHeader(); err != nil {
		return err
	}
	cols := make([]string, len(r.fields))
	for i, f := range r.fields {
		cols[i] = string(f)
	}
	if i, j := duplicateName(cols); j >= 0 {
		// A data error at the second name, as a repeated key is.
		err := r.fieldError(j, duplicateNameError(cols, i, j))
		err.Final = true
		return err
	}
	r.columns = cols
	r.pos = next
	r.line += lines
	r.rowLine = 1
	return nil
}

// CheckColumnNames rejects an empty list of column names and duplicate
// names. Readers of every format use it.
func CheckColumnNames(names []string) error {
	if len(names) == 0 {
		return errors.New("empty header")
	}
	if i, j := duplicateName(names); j >= 0 {
		return duplicateNameError(names, i, j)
	}
	return nil
}

// duplicateName returns the indexes of the first name repeated in names
// and of its repetition, or -1, -1.
func duplicateName(names []string) (first, second int) {
	seen := make(map[string]int, len(names))
	for i, n := range names {
		if j, ok := seen[n]; ok {
			return j, i
		}
		seen[n] = i
	}
	return -1, -1
}

func duplicateNameError(names []string, i, j int) error {
	return fmt.Errorf("duplicate column name %q (columns %d and %d)", names[j], i+1, j+1)
}

// lineEndInHeader refuses a header (in records mode, a first record) with
// a carriage return in an unquoted field: the file's lines end with a CR
// alone (as classic Mac OS wrote them), which are not line ends here, so
// the whole file would read as one line of run-together fields.
func (r *csvReader) lineEndInHeader() error {
	for i, f := range r.fields {
		k := bytes.IndexByte(f, '\r')
		if k < 0 || (i/64 < len(r.quoted) && r.quoted[i/64]&(1<<(i%64)) != 0) {
			continue
		}
		what := "header"
		if r.records {
			what = "first line"
		}
		line, col := r.fieldPos(i)
		r.errLine = line
		return &RowError{File: r.name, Line: line, Column: col + k, Final: true,
			Err: fmt.Errorf(`a carriage return not followed by a line feed in the %s: lines that end with a CR alone (classic Mac OS) are not line ends; convert them to LF or CRLF (tr '\r' '\n' < in.csv > out.csv)`, what)}
	}
	return nil
}

func (r *csvReader) Columns() []string { return r.columns }

// Line returns the line on which the last row starts, or for a bad row
// the line of its fault (the field at fault may start on a later line).
func (r *csvReader) Line() int64 {
	if r.errLine > 0 {
		return r.errLine
	}
	return r.rowLine
}

func (r *csvReader) Close() error {
	var first error
	for _, c := range r.closers {
		if err := c.Close(); err != nil && first == nil {
			first = err
		}
	}
	r.closers = nil
	if r.err == nil {
		r.err = errors.New("source: reader closed")
	}
	return first
}

// Next returns the next row; see Reader.
func (r *csvReader) Next() ([][]byte, error) {
	if r.err != nil {
		return nil, r.err
	}
	r.errLine = 0
	if r.blankPending > 0 {
		return r.blankRow()
	}
	for {
		for r.pos == r.end {
			if r.eof {
				r.err = io.EOF
				return nil, io.EOF
			}
			if err := r.fill(); err != nil {
				return nil, err
			}
		}
		blank, err := r.atBlankLine()
		if err != nil {
			return nil, err
		}
		if !blank {
			break
		}
		if err := r.consumeBlankLines(); err != nil {
			return nil, err
		}
		if r.records {
			r.blankPending = 0 // records mode skips blank lines
			continue
		}
		if r.blankPending == 0 {
			r.err = io.EOF
			return nil, io.EOF
		}
		return r.blankRow()
	}

	next, lines, serr, err := r.parse()
	if err != nil {
		return nil, err
	}
	start := r.pos // parse may have moved the record to the front
	r.recStart = start
	r.rowLine = r.line
	r.pos = next
	r.line += lines
	if serr.msg != "" {
		return nil, r.fieldError(serr.col-1, errors.New(serr.msg))
	}
	if r.records && !r.firstDone {
		r.firstDone = true
		if err := r.lineEndInHeader(); err != nil {
			r.err = err
			return nil, err
		}
	}
	if !r.records && len(r.fields) != len(r.columns) {
		// At the first field too many, or where the first one missing
		// would start.
		return nil, r.fieldError(min(len(r.fields), len(r.columns)),
			fmt.Errorf("expected %d fields, found %d", len(r.columns), len(r.fields)))
	}
	if !utf8.Valid(r.buf[start:next]) {
		for i, f := range r.fields {
			if !utf8.Valid(f) {
				err := fmt.Errorf("invalid UTF-8 in field %d", i+1)
				if !r.records {
					err = fmt.Errorf("invalid UTF-8 in field %d (%s)", i+1, r.columns[i])
				}
				return nil, r.fieldError(i, err)
			}
		}
	}
	return r.fields, nil
}

// FieldPos returns the line and the byte column where field i of the row
// last returned by Next starts, or for i equal to its number of fields
// where a field after the last would start; see FieldPositioner.
func (r *csvReader) FieldPos(i int) (line int64, column int) {
	if i == len(r.fields) {
		return r.endPos()
	}
	return r.fieldPos(i)
}

// AppendQuoted appends the set of the quoted fields of the row last
// returned by Next to dst; see FieldPositioner.
func (r *csvReader) AppendQuoted(dst []uint64) []uint64 {
	return append(dst, r.quoted...)
}

// fieldError returns err as a *RowError placed where field i of the
// record last parsed starts (FieldPos), whose line Line then returns.
func (r *csvReader) fieldError(i int, err error) *RowError {
	line, col := r.FieldPos(i)
	r.errLine = line
	return &RowError{File: r.name, Line: line, Column: col, Err: err}
}

// fieldPos returns the line and the 1-based byte column where field i of
// the record last returned by Next starts (at its opening quote for a
// quoted field). The record's bytes are still in the buffer: only the
// next call to Next moves them.
func (r *csvReader) fieldPos(i int) (line int64, column int) {
	if i < 0 || i >= len(r.fields) {
		return r.rowLine, 0
	}
	if r.plain {
		// One line without quotes: fields and delimiters follow each other.
		col := 1
		for _, f := range r.fields[:i] {
			col += len(f) + 1
		}
		return r.rowLine, col
	}
	before := r.buf[r.recStart : r.recStart+r.starts[i]]
	line = r.rowLine + int64(bytes.Count(before, []byte{'\n'}))
	return line, len(before) - bytes.LastIndexByte(before, '\n')
}

// endPos returns the line and the 1-based byte column just past the last
// field of the record last returned by Next (where a field missing from
// it would start).
func (r *csvReader) endPos() (line int64, column int) {
	rec := r.buf[r.recStart:r.pos]
	rec = bytes.TrimSuffix(rec, []byte{'\n'})
	rec = bytes.TrimSuffix(rec, []byte{'\r'})
	line = r.rowLine + int64(bytes.Count(rec, []byte{'\n'}))
	return line, len(rec) - bytes.LastIndexByte(rec, '\n')
}

// blankRow returns one pending blank line: a row with one empty field for
// a single-column table, a RowError otherwise.
func (r *csvReader) blankRow() ([][]byte, error) {
	r.rowLine = r.blankLine
	r.blankLine++
	r.blankPending--
	// One empty field on its line, at column 1 (FieldPos).
	r.fields = append(r.fields[:0], r.buf[r.pos:r.pos:r.pos])
	r.recStart, r.plain, r.quoted = r.pos, true, r.quoted[:0]
	if len(r.columns) == 1 {
		return r.fields, nil
	}
	return nil, r.fieldError(1, fmt.Errorf("expected %d fields, found 1 (blank line)", len(r.columns)))
}

// atBlankLine reports whether the input at pos is an empty line ("\n",
// "\r\n", or a lone "\r" at the end of the input).
func (r *csvReader) atBlankLine() (bool, error) {
	for {
		if r.pos == r.end {
			if r.eof {
				return false, nil
			}
		} else {
			switch r.buf[r.pos] {
			case '\n':
				return true, nil
			case '\r':
				if r.pos+1 < r.end {
					return r.buf[r.pos+1] == '\n', nil
				}
				if r.eof {
					return true, nil
				}
			default:
				return false, nil
			}
		}
		if err := r.fill(); err != nil {
			return false, err
		}
	}
}

// consumeBlankLines skips a run of blank lines and records how many there
// were in blankPending. Blank lines that run up to the end of the input
// are not rows, so blankPending is left at zero in that case.
func (r *csvReader) consumeBlankLines() error {
	first := r.line
	var n int64
	for {
		for r.pos < r.end {
			c := r.buf[r.pos]
			if c == '\n' {
				r.pos++
				n++
				r.line++
				continue
			}
			if c != '\r' {
				r.blankPending, r.blankLine = n, first
				return nil
			}
			if r.pos+1 == r.end {
				break // need to see the next byte
			}
			if r.buf[r.pos+1] != '\n' {
				r.blankPending, r.blankLine = n, first
				return nil
			}
			r.pos += 2
			n++
			r.line++
		}
		if r.eof {
			// Only blank lines (and maybe a final lone CR) remain.
			r.pos = r.end
			r.blankPending = 0
			return nil
		}
		if err := r.fill(); err != nil {
			return err
		}
	}
}

// fill reads more input into the buffer, first moving the unread part to
// the front and growing the buffer if it is full. It reads until the
// buffer is full or the input ends. Errors are final and also stored.
func (r *csvReader) fill() error {
	if r.rerr != nil {
		r.err = fmt.Errorf("%s: %w", r.name, r.rerr)
		return r.err
	}
	r.quote = -1
	if r.pos > 0 {
		r.end = copy(r.buf, r.buf[r.pos:r.end])
		r.pos = 0
	}
	if r.end == len(r.buf) {
		if len(r.buf) >= maxRecordSize {
			r.rowLine = r.line
			r.err = &RowError{File: r.name, Line: r.line, Err: fmt.Errorf("record longer than %d MiB (unbalanced quotes?)", maxRecordSize>>20), Final: true}
			return r.err
		}
		nb := make([]byte, min(2*len(r.buf), maxRecordSize))
		copy(nb, r.buf[:r.end])
		r.buf = nb
	}
	for empty, start := 0, r.end; r.end < len(r.buf); {
		n, err := r.src.Read(r.buf[r.end:])
		r.end += n
		if err == io.EOF {
			r.eof = true
			return nil
		}
		if err != nil {
			if r.end > start {
				r.rerr = err // first use the data read so far
				return nil
			}
			r.err = fmt.Errorf("%s: %w", r.name, err)
			return r.err
		}
		if n > 0 {
			empty = 0
		} else if empty++; empty >= 100 {
			r.err = fmt.Errorf("%s: %w", r.name, io.ErrNoProgress)
			return r.err
		}
	}
	return nil
}

// parse parses the record at pos into r.fields, reading more input as
// needed. It returns the offset just past the record, the number of lines
// the record spans (counting its terminating newline) and the first syntax
// problem found. A non-nil error is final.
func (r *csvReader) parse() (next int, lines int64, serr syntaxErr, err error) {
	for {
		next, lines, serr, more := r.parseBuffered(r.eof)
		if !more {
			return next, lines, serr, nil
		}
		if err := r.fill(); err != nil {
			return 0, 0, syntaxErr{}, err
		}
	}
}

// parseBuffered parses the record at pos from the buffered input. If the
// record may continue past the buffered input and atEOF is false, it
// returns more == true and the caller must fill the buffer and try again.
func (r *csvReader) parseBuffered(atEOF bool) (next int, lines int64, serr syntaxErr, more bool) {
	buf := r.buf[:r.end]
	d := r.delim
	r.fields = r.fields[:0]
	r.rec = r.rec[:0]
	r.quoted = r.quoted[:0]

	// Fast path: the whole line is buffered and contains no quote.
	if nl := bytes.IndexByte(buf[r.pos:], '\n'); nl >= 0 {
		line := buf[r.pos : r.pos+nl]
		if r.noQuote {
			r.quote = len(buf)
		} else if r.quote < r.pos {
			if q := bytes.IndexByte(buf[r.pos:], '"'); q >= 0 {
				r.quote = r.pos + q
			} else {
				r.quote = len(buf)
			}
		}
		if r.quote > r.pos+nl {
			if n := len(line); n > 0 && line[n-1] == '\r' {
				line = line[:n-1]
			}
			for {
				j := bytes.IndexByte(line, d)
				if j < 0 {
					break
				}
				r.fields = append(r.fields, line[:j:j])
				line = line[j+1:]
			}
			r.fields = append(r.fields, line[:len(line):len(line)])
			r.plain = true
			return r.pos + nl + 1, 1, syntaxErr{}, false
		}
	} else if !atEOF {
		return 0, 0, syntaxErr{}, true
	}

	// General path: quoted fields, or the last line of the input.
	r.plain = false
	r.starts = r.starts[:0]
	lines = 1
	i := r.pos
	for col := 1; ; col++ {
		r.starts = append(r.starts, i-r.pos)
		if i < len(buf) && buf[i] == '"' && !r.noQuote {
			for len(r.quoted) <= (col-1)/64 {
				r.quoted = append(r.quoted, 0)
			}
			r.quoted[(col-1)/64] |= 1 << ((col - 1) % 64)
			qline := r.line + lines - 1
			start := len(r.rec)
			i++
			for {
				j := bytes.IndexByte(buf[i:], '"')
				if j < 0 {
					if !atEOF {
						return 0, 0, syntaxErr{}, true
					}
					seg := buf[i:]
					lines += int64(bytes.Count(seg, []byte{'\n'}))
					r.rec = append(r.rec, seg...)
					r.fields = append(r.fields, r.rec[start:len(r.rec):len(r.rec)])
					if serr.msg == "" {
						serr = syntaxErr{col, fmt.Sprintf("unterminated quoted field starting at line %d", qline)}
					}
					return len(buf), lines, serr, false
				}
				seg := buf[i : i+j]
				lines += int64(bytes.Count(seg, []byte{'\n'}))
				r.rec = append(r.rec, seg...)
				i += j + 1
				if i < len(buf) && buf[i] == '"' {
					r.rec = append(r.rec, '"')
					i++
					continue
				}
				if i == len(buf) && !atEOF {
					return 0, 0, syntaxErr{}, true
				}
				break
			}
			// After the closing quote.
			if i == len(buf) {
				r.fields = append(r.fields, r.rec[start:len(r.rec):len(r.rec)])
				return i, lines, serr, false
			}
			switch c := buf[i]; {
			case c == d:
				r.fields = append(r.fields, r.rec[start:len(r.rec):len(r.rec)])
				i++
				continue
			case c == '\n':
				r.fields = append(r.fields, r.rec[start:len(r.rec):len(r.rec)])
				return i + 1, lines, serr, false
			case c == '\r' && i+1 < len(buf) && buf[i+1] == '\n':
				r.fields = append(r.fields, r.rec[start:len(r.rec):len(r.rec)])
				return i + 2, lines, serr, false
			case c == '\r' && i+1 == len(buf):
				if !atEOF {
					return 0, 0, syntaxErr{}, true
				}
				r.fields = append(r.fields, r.rec[start:len(r.rec):len(r.rec)])
				return i + 1, lines, serr, false
			}
			// Something else follows the closing quote: report it and
			// keep the rest, up to the next delimiter or newline, as
			// part of the field.
			if serr.msg == "" {
				serr = syntaxErr{col, "extraneous character after closing quote"}
			}
			k := i
			for k < len(buf) && buf[k] != d && buf[k] != '\n' {
				k++
			}
			if k == len(buf) && !atEOF {
				return 0, 0, syntaxErr{}, true
			}
			rest := buf[i:k]
			if k < len(buf) && buf[k] == '\n' || k == len(buf) {
				rest = bytes.TrimSuffix(rest, []byte{'\r'})
			}
			r.rec = append(r.rec, rest...)
			r.fields = append(r.fields, r.rec[start:len(r.rec):len(r.rec)])
			if k == len(buf) {
				return k, lines, serr, false
			}
			if buf[k] == '\n' {
				return k + 1, lines, serr, false
			}
			i = k + 1
			continue
		}

		// Unquoted field.
		k := i
		for k < len(buf) {
			if c := buf[k]; c == d || c == '\n' {
				break
			} else if c == '"' && d != '\t' && !r.noQuote && serr.msg == "" {
				// TSV, where a quote is text, is read leniently.
				serr = syntaxErr{col, "bare quote in unquoted field"}
			}
			k++
		}
		if k == len(buf) && !atEOF {
			return 0, 0, syntaxErr{}, true
		}
		f := buf[i:k]
		if k < len(buf) && buf[k] == d {
			r.fields = append(r.fields, f[:len(f):len(f)])
			i = k + 1
			continue
		}
		// End of line or end of input.
		if n := len(f); n > 0 && f[n-1] == '\r' {
			f = f[:n-1]
		}
		r.fields = append(r.fields, f[:len(f):len(f)])
		if k == len(buf) {
			return k, lines, serr, false
		}
		return k + 1, lines, serr, false
	}
}
