package source

import (
	"io"
	"os"
)

// CSVRecords reads the records of a CSV or TSV file one at a time, with
// the dialect, decompression and errors of the CSV Reader (RFC 4180;
// *RowError for a bad record, placed at the line and byte column where
// the field at fault starts), but
// leaves the header and the number of fields to the caller: every record
// is returned as read, the first one too, whatever its number of fields.
// Blank lines are skipped. It is for readers that decide for themselves
// what the first row is, such as compile/iptable's for headerless IP
// range files.
//
// A CSVRecords is not safe for concurrent use.
type CSVRecords struct{ r *csvReader }

// NewCSVRecords reads CSV records from r, decompressed as by NewCSVReader;
// name names it in errors. Of the options, it reads Delimiter (zero means
// a tab for a name ending in .tsv or .tab, with or without .gz, and ','
// otherwise) and Quote. Close does not close r.
func NewCSVRecords(r io.Reader, name string, opts Options) (*CSVRecords, error) {
	cr, err := newCSVReaderMode(r, name, recordsOptions(opts), nil, csvBufSize, true)
	if err != nil {
		return nil, err
	}
	return &CSVRecords{r: cr}, nil
}

// OpenCSVRecords opens the CSV or TSV file at path, read with the
// options' Delimiter (zero: by the name, as NewCSVRecords) and Quote.
// Errors name the file.
func OpenCSVRecords(path string, opts Options) (*CSVRecords, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err // *PathError names the file
	}
	r, err := newCSVReaderMode(f, path, recordsOptions(opts), f, csvBufSize, true)
	if err != nil {
		return nil, err
	}
	return &CSVRecords{r: r}, nil
}

// Next returns the next record, one field per slice; the slices are valid
// until the next call. At the end it returns io.EOF. A bad record is a
// *RowError after which Next may be called again; any other error is
// final.
func (c *CSVRecords) Next() ([][]byte, error) { return c.r.Next() }

// Line returns the line on which the record last returned starts.
func (c *CSVRecords) Line() int64 { return c.r.Line() }

// FieldPos returns the line and the 1-based byte column where field i of
// the record last returned by Next starts (its opening quote, for a
// quoted field).
func (c *CSVRecords) FieldPos(i int) (line int64, column int) { return c.r.fieldPos(i) }

// EndPos returns the line and the 1-based byte column just past the last
// field of the record last returned by Next: where a field missing from
// it would start.
func (c *CSVRecords) EndPos() (line int64, column int) { return c.r.endPos() }

// Close closes the file.
func (c *CSVRecords) Close() error { return c.r.Close() }

// recordsOptions keeps the options CSVRecords reads.
func recordsOptions(o Options) Options {
	return Options{Delimiter: o.Delimiter, Quote: o.Quote}
}
