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
	hugePages(b)
	return b, nil
}

func munmap(b []byte) error { return unix.Munmap(b) }

// willNeed reads b in ahead of use: populate where it can (huge folios),
// else MADV_WILLNEED, whose readahead reads small folios that stay small.
func willNeed(b []byte) {
	if len(b) == 0 {
		return
	}
	if populate(b) != nil {
		_ = unix.Madvise(b, unix.MADV_WILLNEED)
	}
}
