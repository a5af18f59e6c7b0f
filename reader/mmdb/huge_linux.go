package mmdb

import "golang.org/x/sys/unix"

const hugePage = 2 << 20

// hugeCopy copies b into anonymous memory backed by transparent huge pages
// where the kernel allows them. A search tree walk touches one node per
// level at random: on 4 KiB pages nearly every level below the top costs a
// TLB miss (a long page walk under virtualization), on 2 MiB pages few do.
// It returns nil if the memory cannot be had; free releases it.
func hugeCopy(b []byte) (c []byte, free func()) {
	n := (len(b) + hugePage - 1) &^ (hugePage - 1)
	m, err := unix.Mmap(-1, 0, n+hugePage, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, nil
	}
	// Align the start to a huge page boundary.
	addr := uintptrOf(m)
	skip := int((hugePage - addr%hugePage) % hugePage)
	c = m[skip : skip+n]
	_ = unix.Madvise(c, unix.MADV_HUGEPAGE)
	copy(c, b)
	_ = unix.Mprotect(c, unix.PROT_READ)
	return c[:len(b):len(b)], func() { _ = unix.Munmap(m) }
}
