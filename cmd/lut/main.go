// Command lut compiles tabular and IP sources into lookup tables and inspects them.
//
// Run "lut --help" for the commands.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	_ "github.com/lutkit/lutkit/compile/source/all" // every source format
)

// genDocs is set when lut is built with -tags gendocs (gendocs.go):
// "lut __gendocs DIR" then writes the man pages and completions to DIR.
var genDocs func(root *cobra.Command, dir string) error

func main() {
	handleSignals()
	if genDocs != nil && len(os.Args) == 3 && os.Args[1] == "__gendocs" {
		if err := genDocs(newRootCommand(), os.Args[2]); err != nil {
			fmt.Fprintln(os.Stderr, "lut:", err)
			os.Exit(1)
		}
		return
	}
	err := newRootCommand().Execute()
	if err == nil {
		return
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.msg != "" {
			fmt.Fprintln(os.Stderr, "lut:", ee.msg)
		}
		os.Exit(ee.code)
	}
	fmt.Fprintln(os.Stderr, "lut:", err)
	os.Exit(2)
}
