package transaction

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// lockWithPID makes dir/x.lock, aged by age, and, when pid > 0, dir/x~pid.lock naming pid.
func lockWithPID(t *testing.T, dir string, age time.Duration, pid int) (lock, pidFile string) {
	t.Helper()
	lock, pidFile = filepath.Join(dir, "x.lock"), filepath.Join(dir, "x~pid.lock")
	if err := os.WriteFile(lock, []byte("held"), 0o644); err != nil {
		t.Fatal(err)
	}
	if pid > 0 {
		if err := os.WriteFile(pidFile, []byte(fmt.Sprintf("pid %d\n", pid)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	then := time.Now().Add(-age)
	for _, p := range []string{lock, pidFile} {
		os.Chtimes(p, then, then)
	}
	return lock, pidFile
}

func exists(p string) bool { _, err := os.Lstat(p); return err == nil }

// TestBreakStaleHook: checkStale's hook turns a stale-lock failure back into lock
// contention only when breaking is enabled and the lock was removed, and reports the
// removal once.
func TestBreakStaleHook(t *testing.T) {
	for _, enabled := range []bool{false, true} {
		t.Run(fmt.Sprint(enabled), func(t *testing.T) {
			dir := t.TempDir()
			lock, _ := lockWithPID(t, dir, time.Hour, 0)
			var got []BrokenLock
			r := &run{Runner: &Runner{BreakStaleLocks: enabled, OnBreakLock: func(b BrokenLock) { got = append(got, b) }}}
			l := &LockedError{Lock: lock, Stale: true, StaleReason: "old"}
			e := &Error{Class: ClassStaleLock, Cause: l}
			r.breakStale(e, l, Settings{StaleAfter: time.Minute})
			if !enabled {
				if e.Class != ClassStaleLock || !exists(lock) || len(got) != 0 {
					t.Fatalf("disabled: class %s, lock exists %v, reports %v", e.Class, exists(lock), got)
				}
				return
			}
			if e.Class != ClassLockContention || exists(lock) || len(got) != 1 || got[0].Lock != lock {
				t.Fatalf("enabled: class %s, lock exists %v, reports %v", e.Class, exists(lock), got)
			}
			want := "removed stale lock '" + lock + "' (age 1h0m0s): it is older than the stale-after limit of 1m0s; retrying"
			if s := got[0].String(); s != want {
				t.Errorf("line %q\nwant %q", s, want)
			}
		})
	}
}
