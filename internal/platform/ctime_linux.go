package platform

import (
	"io/fs"
	"syscall"
	"time"
)

// ChangeTime is the inode change time of a file (ctime), when the system reports it.
func ChangeTime(fi fs.FileInfo) (time.Time, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return time.Time{}, false
	}
	return time.Unix(st.Ctim.Unix()), true
}
