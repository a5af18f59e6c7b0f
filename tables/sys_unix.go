//go:build unix

package tables

import (
	"io/fs"
	"syscall"
)

// sysIDs returns the device and inode numbers of a file.
func sysIDs(fi fs.FileInfo) (dev, ino uint64, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, false
	}
	// Dev is uint64 on linux/amd64 but int32 on darwin and uint32 on
	// linux/mips: the conversion is needed on some of the unix targets.
	return uint64(st.Dev), uint64(st.Ino), true //nolint:unconvert // see above
}
