package source

import "io"

// Internals the external tests use.
var NewCSVReaderSize = newCSVReaderSize

const (
	MaxRecordSize = maxRecordSize
	CSVBufSize    = csvBufSize
)

// NewCSVRecordsSize is NewCSVRecords with an initial buffer of bufSize
// bytes.
func NewCSVRecordsSize(r io.Reader, name string, opts Options, bufSize int) (*CSVRecords, error) {
	cr, err := newCSVReaderMode(r, name, recordsOptions(opts), nil, bufSize, true)
	if err != nil {
		return nil, err
	}
	return &CSVRecords{r: cr}, nil
}
