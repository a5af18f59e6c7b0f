package fsutil

import "errors"

// ErrLocked is what Lock's error wraps when another holder has the lock.
var ErrLocked = errors.New("locked by another process")
