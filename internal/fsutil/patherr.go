package fsutil

import (
	"errors"
	"fmt"
	"os"
)

// UnwrapPath drops the path of an *os.PathError (keeping its operation
// and cause) or of a *NotRegularError (keeping its reason) for callers
// that name the file themselves; other errors are returned as they are.
func UnwrapPath(err error) error {
	var nr *NotRegularError
	if errors.As(err, &nr) {
		return &pathless{msg: nr.Reason(), err: nr}
	}
	var pe *os.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %w", pe.Op, pe.Err)
	}
	return err
}

// pathless is an error shown without its path.
type pathless struct {
	msg string
	err error
}

func (p *pathless) Error() string { return p.msg }
func (p *pathless) Unwrap() error { return p.err }
