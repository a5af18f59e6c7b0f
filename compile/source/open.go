package source

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// StdinName is the name standard input goes by in error messages.
const StdinName = "<stdin>"

// Open opens the source at path. The format is opts.Format or, when that
// is empty, is detected from the file name (see Options). The path "-"
// reads CSV (or, with Format "tsv", TSV) from standard input. Errors name
// the file.
func Open(path string, opts Options) (Reader, error) {
	format := strings.ToLower(opts.Format)
	if path == "-" {
		switch format {
		case "", "csv", "tsv":
		default:
			return nil, fmt.Errorf("%s: format %q cannot be read from standard input", StdinName, opts.Format)
		}
		return NewCSVReader(os.Stdin, StdinName, opts)
	}
	if format == "" {
		f, ok := formatFromName(path)
		if !ok {
			return nil, fmt.Errorf("%s: unknown source format (want .csv, .tsv, .tab, .txt, optionally .gz, .db, .sqlite, .sqlite3, .parquet, .arrow, .feather or .ipc, or an explicit format)", path)
		}
		format = f
	}
	switch format {
	case "csv", "tsv":
		f, err := os.Open(path)
		if err != nil {
			return nil, err // *PathError names the file
		}
		if opts.Format == "" {
			opts.Format = format
		}
		r, err := newCSVReader(f, path, opts, f)
		if err != nil {
			return nil, err
		}
		return r, nil
	case "sqlite":
		return openSQLite(path, opts)
	case "parquet":
		return openParquet(path)
	case "arrow":
		return openArrow(path)
	}
	return nil, fmt.Errorf("%s: unknown source format %q (want csv, tsv, sqlite, parquet or arrow)", path, opts.Format)
}

// formatFromName maps a file name's extension to a format.
func formatFromName(name string) (string, bool) {
	base := strings.ToLower(filepath.Base(name))
	gz := strings.HasSuffix(base, ".gz")
	base = strings.TrimSuffix(base, ".gz")
	switch filepath.Ext(base) {
	case ".csv", ".txt":
		return "csv", true
	case ".tsv", ".tab":
		return "tsv", true
	}
	if gz {
		return "", false
	}
	switch filepath.Ext(base) {
	case ".db", ".sqlite", ".sqlite3":
		return "sqlite", true
	case ".parquet":
		return "parquet", true
	case ".arrow", ".feather", ".ipc":
		return "arrow", true
	}
	return "", false
}
