//go:build unix && !linux

package mmdb

// hugePages does nothing where the kernel has no MADV_HUGEPAGE.
func hugePages([]byte) {}
