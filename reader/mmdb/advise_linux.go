package mmdb

import "golang.org/x/sys/unix"

// hugePages lets the kernel map page-cache folios of 2 MiB in b with one
// entry each, and makes faults read the file in 2 MiB folios.
func hugePages(b []byte) { _ = unix.Madvise(b, unix.MADV_HUGEPAGE) }
