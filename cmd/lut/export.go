package main

import (
	"bufio"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/lutkit/lutkit/compile/source"
	"github.com/lutkit/lutkit/internal/fsutil"
	"github.com/lutkit/lutkit/internal/rowjson"
	"github.com/lutkit/lutkit/reader"
)

func newExportCommand() *cobra.Command {
	var formatName, out string
	cmd := &cobra.Command{
		Use:   "export TABLE [--format csv|tsv|jsonl|parquet] [--out FILE]",
		Short: "Write a table's rows back out as CSV, TSV, JSON lines or Parquet",
		Long: `Export writes every row of a .lut table, in the order of its source, with
a header of the column names. Compiling an exported CSV, TSV or Parquet
file with the same --key, --fold-case, --column-type, --match (as lut
inspect shows them) and SOURCE_DATE_EPOCH gives a
byte-identical table.

A damaged table (a section that does not match its checksum, a row its
key does not find) is refused: the error names the file and the damage,
the exit status is 2, and no --out file is written.`,
		Example: `  lut export customers.lut -o customers.csv
  lut export customers.lut --format parquet -o customers.parquet
  lut export customers.lut --format jsonl | head`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := notMMDB("export", args[0]); err != nil {
				return err
			}
			return runExport(cmd, args[0], formatName, out)
		},
	}
	cmd.Flags().StringVar(&formatName, "format", "csv", "csv, tsv, jsonl or parquet")
	cmd.Flags().StringVarP(&out, "out", "o", "-", `output file ("-" for standard output)`)
	hiddenAlias(cmd.Flags(), "output", "out")
	return cmd
}

func runExport(cmd *cobra.Command, path, formatName, out string) error {
	switch formatName {
	case "csv", "tsv", "jsonl", "parquet":
	default:
		return &exitError{code: 2, msg: fmt.Sprintf("export: unknown --format %q (want csv, tsv, jsonl or parquet)", formatName)}
	}
	if formatName == "parquet" && out == "-" {
		return &exitError{code: 2, msg: "export: Parquet output needs a file (--out FILE)"}
	}
	if out != "-" {
		if err := fsutil.CheckNotInput(out, path); err != nil {
			return &exitError{code: 2, msg: "export: " + err.Error()}
		}
	}
	t, err := openLUT(path)
	if err != nil {
		return err
	}
	defer t.Close()
	write := func(w io.Writer) (int64, error) {
		bw := bufio.NewWriterSize(w, 1<<20)
		put, done, err := rowWriter(formatName, bw, t)
		if err != nil {
			return 0, err
		}
		var n int64
		var werr error
		err = t.Records(func(v reader.View) bool {
			if werr = put(v); werr != nil {
				return false
			}
			n++
			return true
		})
		if err == nil {
			err = werr
		}
		if err == nil {
			err = done()
		}
		if err == nil {
			err = bw.Flush()
		}
		return n, err
	}
	var n int64
	if out == "-" {
		n, err = write(cmd.OutOrStdout())
	} else {
		err = fsutil.WriteStream(out, func(w io.Writer) (err error) {
			n, err = write(w)
			return err
		})
	}
	if err != nil {
		return fmt.Errorf("export %s: %w", path, err)
	}
	if out != "-" {
		fmt.Fprintf(cmd.ErrOrStderr(), "exported %d rows to %s\n", n, out)
	}
	return nil
}

// rowWriter returns what writes each row of t to w in format, and what
// ends the output. JSON lines are written as every program of the project
// writes a row (package rowjson); the other formats by compile/source.
func rowWriter(format string, w io.Writer, t *reader.Table) (put func(reader.View) error, done func() error, err error) {
	if format == "jsonl" {
		enc := rowjson.NewEncoder(t.Columns(), t.ColumnTypes())
		var line []byte
		put = func(v reader.View) error {
			line = append(enc.Append(line[:0], v), '\n')
			_, err := w.Write(line)
			return err
		}
		return put, func() error { return nil }, nil
	}
	rw, err := source.NewWriter(format, w, t.Columns())
	if err != nil {
		return nil, nil, err
	}
	fields := make([][]byte, len(t.Columns()))
	put = func(v reader.View) error {
		for i := range fields {
			fields[i] = v.Col(i)
		}
		return rw.Write(fields)
	}
	return put, rw.Close, nil
}
