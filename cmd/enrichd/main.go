// Command enrichd is the enrichment daemon: see package enrichd and
// docs/enrichd.md. Run "enrichd --help" for its flags.
package main

import (
	"io"
	"os"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run runs the command with args and returns its exit status: 0 on
// success, 1 when the daemon fails to start or stops with an error, 2 on
// usage and configuration errors.
func run(args []string, stdout, stderr io.Writer) int {
	cmd := newRootCommand(stdout, stderr)
	cmd.SetArgs(args)
	if err := cmd.Execute(); err != nil {
		return exitStatus(err, stderr)
	}
	return 0
}
