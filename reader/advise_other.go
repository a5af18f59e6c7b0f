//go:build unix && !linux

package reader

import "errors"

// hugePages does nothing where the kernel has no MADV_HUGEPAGE.
func hugePages([]byte) {}

// populate is unsupported where the kernel has no MADV_POPULATE_READ.
func populate([]byte) error { return errors.ErrUnsupported }
