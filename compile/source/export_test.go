package source

// Internals the external tests use.
var NewCSVReaderSize = newCSVReaderSize

const (
	MaxRecordSize = maxRecordSize
	CSVBufSize    = csvBufSize
)
