package transaction

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/refretry/refretry/internal/testutil"
)

// reapedPID is the pid of a process that has exited and been reaped.
func reapedPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

// TestCheckStaleUnseenHolder: git's "no longer running" advice, and a ~pid.lock naming
// a pid that is not running here, are lock contention while the lock is younger than
// the pid grace (a live holder in another pid namespace looks the same), with the
// reason kept for the final report; past the grace the lock is stale, and with
// BreakStaleLocks it is removed and the update retried.
func TestCheckStaleUnseenHolder(t *testing.T) {
	t.Parallel()
	pid := reapedPID(t)
	unseen := fmt.Sprintf("its holder, process %d (from the ~pid.lock file), is not running here", pid)
	cases := []struct {
		name      string
		age       time.Duration
		settings  Settings
		breakLock bool
		class     Class
		removed   bool
		want      string // in the advice
	}{
		{"young", time.Second, Settings{StaleAfter: DefaultStaleAfter}, false, ClassLockContention, false,
			unseen + ", but the lock is younger than the pid grace of 2m0s, and a live holder in another pid namespace looks the same from here"},
		{"young, breaking", time.Second, Settings{StaleAfter: DefaultStaleAfter}, true, ClassLockContention, false,
			"younger than the pid grace of 2m0s"},
		{"past a short grace", 10 * time.Minute, Settings{StaleAfter: time.Hour, PIDGrace: 5 * time.Minute}, false, ClassStaleLock, false,
			unseen + ", and the lock is older than the pid grace of 5m0s"},
		{"past a short grace, breaking", 10 * time.Minute, Settings{StaleAfter: time.Hour, PIDGrace: 5 * time.Minute}, true, ClassLockContention, true, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			lock, pidFile := testutil.AgedLock(t, t.TempDir(), tc.age, pid)
			stderr := fmt.Sprintf("fatal: update_ref failed for ref 'refs/heads/x': cannot lock ref 'refs/heads/x': Unable to create '%s': File exists.\n\n"+
				"Lock was held by process %d, which is no longer running; the lock file appears to be stale\n", lock, pid)
			e := Classify(128, []byte(stderr))
			var l *LockedError
			if e.Class != ClassLockContention || !errors.As(e, &l) || !l.HolderUnseen || l.PID != pid || l.Stale {
				t.Fatalf("Classify: %s %#v; want lock contention with an unseen holder %d", e.Class, e.Cause, pid)
			}
			var broken []BrokenLock
			s := tc.settings
			r := &run{Runner: &Runner{BreakStaleLocks: tc.breakLock, OnBreakLock: func(b BrokenLock) { broken = append(broken, b) },
				Settings: func() (Settings, error) { return s, nil }}}
			r.checkStale(context.Background(), e)
			if e.Class != tc.class || testutil.Exists(lock) == tc.removed || testutil.Exists(pidFile) == tc.removed || (len(broken) == 1) != tc.removed {
				t.Fatalf("class %s, lock kept %v, pid file kept %v, removals %v; want %s, removed %v", e.Class, testutil.Exists(lock), testutil.Exists(pidFile), broken, tc.class, tc.removed)
			}
			if tc.removed {
				if want := unseen + ", and the lock is older than the pid grace of 5m0s"; !strings.HasPrefix(broken[0].Reason, want) {
					t.Errorf("removal reason %q, want it to start %q", broken[0].Reason, want)
				}
				return
			}
			if a := e.Advice(); !strings.Contains(a, tc.want) || !strings.Contains(a, fmt.Sprintf("holder pid %d", pid)) {
				t.Errorf("advice %q: want the holder pid and %q", a, tc.want)
			}
			if !e.HolderUnseen() {
				t.Error("HolderUnseen() is false")
			}
		})
	}
}
