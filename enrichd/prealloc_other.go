//go:build !linux

package enrichd

import (
	"errors"
	"os"
)

func preallocate(*os.File, int64, int64) error { return errors.ErrUnsupported }
