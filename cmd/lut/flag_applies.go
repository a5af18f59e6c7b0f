package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// A flag given where it does not apply (an MMDB flag for a .lut output,
// --at for an .mmdb lookup) is a usage error rather than ignored: the
// user meant something by it.

// notApplicable returns a usage error of command naming each of the flags
// given on cmd (Changed) that does not apply, with what they apply to and
// why they do not here ("applies to .mmdb output only; o.lut is a .lut
// table"), or nil when none of them is given.
func notApplicable(cmd *cobra.Command, command string, names []string, appliesTo, why string) error {
	var msgs []string
	for _, name := range names {
		if cmd.Flags().Changed(name) {
			msgs = append(msgs, fmt.Sprintf("%s: --%s applies to %s only; %s", command, name, appliesTo, why))
		}
	}
	if len(msgs) == 0 {
		return nil
	}
	return &exitError{code: 2, msg: strings.Join(msgs, "\nlut: ")}
}

// mmdbOnlyFlags are the flags of lut compile that only an .mmdb output
// reads: those mmdbFlags registers, but --mmdb itself, which selects it.
func mmdbOnlyFlags() []string {
	fs := pflag.NewFlagSet("mmdb", pflag.ContinueOnError)
	newMMDBFlags().register(fs)
	var names []string
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Name != "mmdb" {
			names = append(names, f.Name)
		}
	})
	return names
}

// lutOnlyFlags are the flags of lut compile that only a .lut output
// reads. --key (the network column when --network is not given),
// --columns, --delimiter and --quote are read by both; --postgres and
// --mysql are refused for an .mmdb output by a message of their own.
var lutOnlyFlags = []string{"fold-case", "on-duplicate", "skip-bad-rows", "column-type", "source-types", "match",
	"range-columns", "valid-from", "valid-to", "overlap", "strict-patterns", "header", "format", "nested",
	"sqlite-table", "sqlite-query", "query", "password-file"}
