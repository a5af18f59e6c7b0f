//go:build linux

package tablebuild

import (
	"os"
	"syscall"
	"time"
)

// changeTime is fi's status change time (st_ctim).
func changeTime(fi os.FileInfo) time.Time {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return time.Unix(st.Ctim.Sec, st.Ctim.Nsec)
	}
	return time.Time{}
}
