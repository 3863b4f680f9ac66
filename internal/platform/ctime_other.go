//go:build !linux && !darwin

package platform

import (
	"io/fs"
	"time"
)

// ChangeTime is not reported here: callers fall back on size and modification time.
func ChangeTime(fi fs.FileInfo) (time.Time, bool) { return time.Time{}, false }
