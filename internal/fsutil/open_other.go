//go:build !unix

package fsutil

import "os"

// openNoBlock opens path read-only, checking its type first: where there
// is no O_NONBLOCK, a named pipe is refused before the open would wait.
func openNoBlock(path string) (*os.File, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &NotRegularError{Path: path, Mode: fi.Mode().Type()}
	}
	return os.Open(path)
}
