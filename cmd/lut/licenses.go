package main

import (
	"fmt"
	"runtime/debug"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/lutkit/lutkit/internal/licenses"
)

func init() { extraCommands = append(extraCommands, newLicensesCommand) }

func newLicensesCommand() *cobra.Command {
	var full bool
	cmd := &cobra.Command{
		Use:   "licenses [--full]",
		Short: "List the licences of lutkit and of the Go modules linked into this program",
		Long: `Licenses prints lutkit's licence (Apache-2.0) and, for every module this
binary was linked with (from its build information), the module's version
and licence. --full prints the licence and NOTICE files of those modules
in full, as they were in the module cache when the list was generated.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runLicenses(cmd, full)
		},
	}
	cmd.Flags().BoolVar(&full, "full", false, "print the licence and NOTICE texts too")
	return cmd
}

func runLicenses(cmd *cobra.Command, full bool) error {
	out := cmd.OutOrStdout()
	fmt.Fprintln(out, "lutkit: Apache-2.0 (the LICENSE file; /usr/share/doc/lutkit/copyright when installed)")
	known := map[string]licenses.Module{}
	for _, m := range licenses.Modules() {
		known[m.Path] = m
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "module\tversion\tlicence")
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Replace != nil {
				d = d.Replace
			}
			lic := "unknown (not in internal/licenses: go generate ./internal/licenses)"
			if m, ok := known[d.Path]; ok && m.Version == d.Version {
				lic = m.License
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\n", d.Path, d.Version, lic)
		}
	}
	tw.Flush()
	if full {
		fmt.Fprintln(out)
		fmt.Fprint(out, licenses.Texts())
	}
	return nil
}
