package reader

import "golang.org/x/sys/unix"

// hugePages lets the kernel map page-cache folios of 2 MiB in b with one
// entry each, and makes faults read the file in 2 MiB folios.
func hugePages(b []byte) { _ = unix.Madvise(b, unix.MADV_HUGEPAGE) }

// populate faults b in through the mapping (Linux 5.14), which reads it in
// 2 MiB folios that the mapping then maps with huge pages.
func populate(b []byte) error { return unix.Madvise(b, unix.MADV_POPULATE_READ) }
