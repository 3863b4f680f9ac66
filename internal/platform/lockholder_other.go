//go:build !linux

package platform

import "os"

// LockHeldByOtherUser reports whether an flock on f's file is held by another
// user's process. Only Linux can tell (/proc/locks): elsewhere, never.
func LockHeldByOtherUser(f *os.File) bool { return false }
