//go:build linux

package tablebuild

import (
	"os"
	"syscall"
	"time"
)

// changeTime is fi's status change time (st_ctim) and its count of
// links (st_nlink), whose change (the file renamed over, removed) moves
// the change time too.
func changeTime(fi os.FileInfo) (time.Time, uint64) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		// st_nlink is 32 bits on some architectures.
		return time.Unix(st.Ctim.Sec, st.Ctim.Nsec), uint64(st.Nlink) //nolint:unconvert // see above
	}
	return time.Time{}, 0
}
