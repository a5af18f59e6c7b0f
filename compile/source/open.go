package source

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// StdinName is the name standard input goes by in error messages.
const StdinName = "<stdin>"

// Open opens the source at path. The format is opts.Format or, when that
// is empty, is detected from the file name (see Options). The path "-"
// reads CSV (or, with Format "tsv", TSV) from standard input. Errors name
// the file.
//
// With opts.Postgres or opts.MySQL set, Open runs opts.Query on that
// database instead, and path must be empty.
func Open(path string, opts Options) (Reader, error) {
	if db := opts.Database(); db != "" {
		if path != "" {
			return nil, fmt.Errorf("%s: a %s source reads no file", path, db)
		}
		f, ok := formats[db]
		if !ok {
			return nil, fmt.Errorf("the %s source is not linked into this program (import github.com/lutkit/lutkit/compile/source/all)", db)
		}
		return f.open("", opts)
	}
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
			return nil, fmt.Errorf("%s: unknown source format (want .csv, .tsv, .tab, .txt, .json, .ndjson, .jsonl, .yaml, .yml, optionally .gz, .db, .sqlite, .sqlite3, .parquet, .arrow, .feather or .ipc, or an explicit format)", path)
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
	}
	if f, ok := formats[format]; ok {
		return f.open(path, opts)
	}
	if linkable[format] {
		return nil, fmt.Errorf("%s: the %s format is not linked into this program (import github.com/lutkit/lutkit/compile/source/all)", path, format)
	}
	return nil, fmt.Errorf("%s: unknown source format %q (want %s)", path, opts.Format, formatList)
}

// formatList names the formats Options.Format takes, for errors.
const formatList = "csv, tsv, json, ndjson, yaml, sqlite, parquet or arrow"

// Formats other than CSV and TSV live in their own packages (sqlite,
// columnar, document, sqldb), so that programs and tests that only read CSV do not link
// their large dependencies. Importing a format package registers it;
// package all imports every one.
type format struct {
	exts []string
	open func(path string, opts Options) (Reader, error)
}

var (
	formats = map[string]format{}
	writers = map[string]func(io.Writer, []string) (Writer, error){}
	// linkable lists the formats a format package provides.
	linkable = map[string]bool{"sqlite": true, "parquet": true, "arrow": true, "json": true, "ndjson": true, "yaml": true}
	// linkableExts are the file name extensions of the linkable formats.
	linkableExts = map[string][]string{
		"sqlite": {".db", ".sqlite", ".sqlite3"}, "parquet": {".parquet"}, "arrow": {".arrow", ".feather", ".ipc"},
		"json": {".json", ".json.gz"}, "ndjson": {".ndjson", ".jsonl", ".ndjson.gz", ".jsonl.gz"}, "yaml": {".yaml", ".yml", ".yaml.gz", ".yml.gz"},
	}
)

// RegisterFormat makes Open read the named format, detected from the
// given file name extensions (with the dot, lower case; ".json.gz" for a
// compressed file the reader decompresses). It is called from
// the init functions of format packages.
func RegisterFormat(name string, exts []string, open func(path string, opts Options) (Reader, error)) {
	formats[name] = format{exts: exts, open: open}
}

// RegisterWriter makes NewWriter write the named format.
func RegisterWriter(name string, newWriter func(w io.Writer, columns []string) (Writer, error)) {
	writers[name] = newWriter
}

// FormatOf returns the format Open reads the file at path in with opts:
// opts.Format in lower case, or the one the name's extension gives (""
// when none does).
func FormatOf(path string, opts Options) string {
	if opts.Format != "" {
		return strings.ToLower(opts.Format)
	}
	f, _ := formatFromName(path)
	return f
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
	ext := filepath.Ext(base)
	if gz {
		ext += ".gz"
	}
	for name, f := range formats {
		if slices.Contains(f.exts, ext) {
			return name, true
		}
	}
	for name, exts := range linkableExts {
		if slices.Contains(exts, ext) {
			return name, true // Open then says the format is not linked
		}
	}
	return "", false
}
