//go:build unix

package mmdb

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// mapFile maps size bytes of f read-only. It reports errors.ErrUnsupported
// when the file system cannot map files.
func mapFile(f *os.File, size int) ([]byte, error) {
	b, err := unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		if errors.Is(err, unix.ENODEV) {
			return nil, errors.ErrUnsupported
		}
		return nil, os.NewSyscallError("mmap", err)
	}
	// Tree walks touch a node per level at random: let the kernel map the
	// file with 2 MiB pages where its page cache allows, as for .lut tables.
	hugePages(b)
	return b, nil
}

func unmapFile(b []byte) error {
	if err := unix.Munmap(b); err != nil {
		return os.NewSyscallError("munmap", err)
	}
	return nil
}
