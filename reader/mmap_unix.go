//go:build unix

package reader

import (
	"os"

	"golang.org/x/sys/unix"
)

// mmapFile maps size bytes of f read-only and shared. The mapping stays
// valid after f is closed.
func mmapFile(f *os.File, size int) ([]byte, error) {
	b, err := unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, err
	}
	// Lookups touch random pages all over the file, so the cost of a lookup
	// is dominated by TLB misses unless the file is mapped with huge pages.
	// MADV_HUGEPAGE lets the kernel map page-cache folios of 2 MiB with one
	// entry, and makes faults read the file in 2 MiB folios.
	_ = unix.Madvise(b, unix.MADV_HUGEPAGE)
	return b, nil
}

func munmap(b []byte) error { return unix.Munmap(b) }

// willNeed reads b in ahead of use. MADV_POPULATE_READ (Linux 5.14)
// faults the pages in through the mapping, which reads them in 2 MiB
// folios that the mapping then maps with huge pages; MADV_WILLNEED, the
// fallback, starts readahead in small folios that stay small.
func willNeed(b []byte) {
	if len(b) == 0 {
		return
	}
	if unix.Madvise(b, unix.MADV_POPULATE_READ) != nil {
		_ = unix.Madvise(b, unix.MADV_WILLNEED)
	}
}
