package transaction

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// inspectLock fills in what the file system says about a held lock: its age, the
// holder pid from a ~pid.lock file, and whether the holder is known to be gone (a
// ~pid.lock naming a dead local process, or a lock older than staleAfter). A lock that
// has disappeared meanwhile is left as it is: it was contention, and it is over.
func inspectLock(l *LockedError, staleAfter time.Duration, now time.Time) {
	if l.Lock == "" {
		return
	}
	fi, err := os.Stat(l.Lock)
	if err != nil {
		return
	}
	l.Age = now.Sub(fi.ModTime())
	if pid, ok := readPIDFile(strings.TrimSuffix(l.Lock, ".lock") + "~pid.lock"); ok {
		l.PID = pid
		if !l.Stale && processGone(pid) {
			l.Stale = true
			l.StaleReason = "its holder, process " + strconv.Itoa(pid) + " (from the ~pid.lock file), is no longer running"
		}
	}
	if !l.Stale && staleAfter > 0 && l.Age > staleAfter {
		l.Stale = true
		l.StaleReason = "it is older than the stale-after limit of " + staleAfter.String()
	}
}

// readPIDFile reads git's "pid <n>" lock-holder file.
func readPIDFile(path string) (int, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	s, ok := strings.CutPrefix(string(bytes.TrimSpace(b)), "pid ")
	if !ok {
		return 0, false
	}
	pid, err := strconv.Atoi(s)
	return pid, err == nil && pid > 0
}

// processGone reports whether no local process has this pid. Like git, it can only see
// this host's processes in this pid namespace.
func processGone(pid int) bool {
	err := syscall.Kill(pid, 0)
	return errors.Is(err, syscall.ESRCH)
}

// reftableLock finds tables.list.lock for the repository git would use: reftable's
// message names no file.
func (r *Runner) reftableLock(ctx context.Context) string {
	if r.reftableLockPath != nil {
		return *r.reftableLockPath
	}
	path := ""
	out, err := r.command(ctx, "rev-parse", "--path-format=absolute", "--git-common-dir", "--git-dir").Output()
	if err == nil {
		for _, dir := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			p := filepath.Join(dir, "reftable", "tables.list.lock")
			if path == "" {
				path = p
			}
			if _, err := os.Stat(p); err == nil {
				path = p
				break
			}
		}
	}
	r.reftableLockPath = &path
	return path
}
