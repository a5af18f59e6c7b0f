package fsutil

import (
	"fmt"
	"io/fs"
	"os"
)

// CheckNotInput refuses an output path that is (following symbolic links)
// the same file as one of the command's inputs: writing it would replace
// the input, with the command's own output, before anything could notice.
// "-" among the inputs is standard input; "" is skipped. An output that
// does not exist yet, or an input that cannot be looked at (the command
// reports it when it opens it), is no conflict. Commands call it before
// they read or write anything.
func CheckNotInput(out string, inputs ...string) error {
	ofi := statOrNil(out)
	if ofi == nil {
		return nil
	}
	for _, in := range inputs {
		if in == "" {
			continue
		}
		if ifi := statOrNil(in); ifi == nil || !os.SameFile(ofi, ifi) {
			continue
		}
		switch in {
		case out:
			return fmt.Errorf("the output %s is also an input: refusing to overwrite it", out)
		case "-":
			return fmt.Errorf("the output %s is the standard input: refusing to overwrite it", out)
		}
		return fmt.Errorf("the output %s is the input %s: refusing to overwrite it", out, in)
	}
	return nil
}

// statOrNil returns the FileInfo of path ("-": standard input), or nil
// when it cannot be had.
func statOrNil(path string) fs.FileInfo {
	var (
		fi  fs.FileInfo
		err error
	)
	if path == "-" {
		fi, err = os.Stdin.Stat()
	} else {
		fi, err = os.Stat(path)
	}
	if err != nil {
		return nil
	}
	return fi
}
