package main

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/lutkit/lutkit/compile/source"
	"github.com/lutkit/lutkit/internal/version"
)

// exitError carries a specific exit status (1: a key was not found, a
// check failed or the input data is bad; 2: usage or I/O errors).
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "lut",
		Short: "Compile and inspect precompiled lookup tables for log enrichment",
		Long: `lut compiles tables (CSV/TSV, SQLite, Parquet, Arrow) into immutable,
memory-mapped .lut files, and IP ranges, CIDR lists and MMDB files into
custom .mmdb files, then looks keys up in them and checks them.

A typical flow:

  lut compile --key Index --out customers.lut customers.csv
  lut get customers.lut 42
  lut verify customers.lut
  lut build tables.yaml --out dist/

Exit status: 0 on success, 1 when a key is not found, a check fails, the
tables differ (diff --exit-code) or a source row is bad (its
file:line:column is printed), 2 on usage or I/O errors (a source file
that cannot be read as its format, or is damaged where no row is at
fault, is one).`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version.String("lut"),
	}
	root.SetVersionTemplate("{{.Version}}\n")
	// A flag that does not parse (a value its type refuses) is a usage
	// error, named by the command.
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return &exitError{code: 2, msg: c.Name() + ": " + err.Error()}
	})
	root.AddCommand(
		newCompileCommand(),
		newGetCommand(),
		newInspectCommand(),
		newVerifyCommand(),
		newExportCommand(),
		newDiffCommand(),
	)
	for _, extra := range extraCommands {
		root.AddCommand(extra())
	}
	return root
}

// extraCommands lets other files of this package register commands
// (lut build) without editing the list above.
var extraCommands []func() *cobra.Command

// dataError gives an error of the input data placed in the source (a
// *source.RowError at its file:line:column: a bad row, a syntax error, a
// repeated key) exit status 1; other errors keep status 2: usage and I/O
// errors, which include a source that cannot be read as its format or is
// damaged where no row is at fault (a Parquet footer or page, a gzip
// stream cut short).
func dataError(err error) error {
	var re *source.RowError
	if errors.As(err, &re) {
		return &exitError{code: 1, msg: err.Error()}
	}
	return err
}
