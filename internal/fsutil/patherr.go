package fsutil

import (
	"errors"
	"fmt"
	"os"
)

// UnwrapPath drops the path of an *os.PathError (keeping its operation
// and cause) for callers that name the file themselves; other errors are
// returned as they are.
func UnwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %w", pe.Op, pe.Err)
	}
	return err
}
