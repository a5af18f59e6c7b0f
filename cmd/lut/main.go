// Command lut compiles tabular and IP sources into lookup tables and inspects them.
//
// Run "lut --help" for the commands.
package main

import (
	"errors"
	"fmt"
	"os"

	_ "github.com/lutkit/lutkit/compile/source/all" // every source format
)

func main() {
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
