// Command enrichd is the enrichment daemon: see package enrichd and
// docs/enrichd.md. Run "enrichd --help" for its flags.
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
)

// genDocs is set when enrichd is built with -tags gendocs (gendocs.go):
// "enrichd __gendocs DIR" then writes the man page and completions to DIR.
var genDocs func(root *cobra.Command, dir string) error

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run runs the command with args and returns its exit status: 0 on
// success, 1 when the daemon fails to start or stops with an error, 2 on
// usage and configuration errors.
func run(args []string, stdout, stderr io.Writer) int {
	cmd := newRootCommand(stdout, stderr)
	if genDocs != nil && len(args) == 2 && args[0] == "__gendocs" {
		if err := genDocs(cmd, args[1]); err != nil {
			fmt.Fprintln(stderr, "enrichd:", err)
			return 1
		}
		return 0
	}
	cmd.SetArgs(args)
	if err := cmd.Execute(); err != nil {
		return exitStatus(err, stderr)
	}
	return 0
}
