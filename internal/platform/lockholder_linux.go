//go:build linux

package platform

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

// LockHeldByOtherUser reports whether an flock(2) on f's file is held by a process
// that is not entirely of this user (its real, effective, saved and file-system uids
// are all this process's effective uid), or by one this process cannot identify
// (gone, or in another pid namespace: /proc/locks then shows pid 0). It reads
// /proc/locks, and is false when that cannot be read.
//
// An flock on a directory can be taken by anyone who can open the directory; a
// lock of another user's is no lock of this user's to wait for.
func LockHeldByOtherUser(f *os.File) bool {
	return lockHeldByOtherUser(f, os.Geteuid())
}

func lockHeldByOtherUser(f *os.File, uid int) bool {
	var st syscall.Stat_t
	if syscall.Fstat(int(f.Fd()), &st) != nil {
		return false
	}
	b, err := os.ReadFile("/proc/locks")
	if err != nil {
		return false
	}
	// "1: FLOCK  ADVISORY  WRITE 19378 fe:00:10173573 0 EOF"; a process waiting for
	// the lock has "->" after the number. The inode alone is compared: the device
	// numbers /proc/locks prints are not always those stat reports (btrfs), and a
	// lock of another file with the same inode number only makes this answer
	// "other" where it need not.
	ino := ":" + strconv.FormatUint(st.Ino, 10)
	for line := range strings.Lines(string(b)) {
		fields := strings.Fields(line)
		if len(fields) < 6 || fields[1] != "FLOCK" || !strings.HasSuffix(fields[5], ino) {
			continue
		}
		if !processOf(fields[4], uid) {
			return true
		}
	}
	return false
}

// processOf reports whether the process with this pid (in /proc's spelling) runs
// entirely as uid.
func processOf(pid string, uid int) bool {
	if n, err := strconv.Atoi(pid); err != nil || n <= 0 {
		return false
	}
	b, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return false
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "Uid:"); ok {
			ids := strings.Fields(v)
			if len(ids) != 4 {
				return false
			}
			for _, id := range ids {
				if id != strconv.Itoa(uid) {
					return false
				}
			}
			return true
		}
	}
	return false
}
