package transaction

import (
	"fmt"
	"testing"
	"time"

	"github.com/refretry/refretry/internal/testutil"
)

// TestBreakStaleHook: checkStale's hook turns a stale-lock failure back into lock
// contention only when breaking is enabled and the lock was removed, and reports the
// removal once.
func TestBreakStaleHook(t *testing.T) {
	for _, enabled := range []bool{false, true} {
		t.Run(fmt.Sprint(enabled), func(t *testing.T) {
			dir := t.TempDir()
			lock, _ := testutil.AgedLock(t, dir, time.Hour, 0)
			var got []BrokenLock
			r := &run{Runner: &Runner{BreakStaleLocks: enabled, OnBreakLock: func(b BrokenLock) { got = append(got, b) }}}
			l := &LockedError{Lock: lock, Stale: true, StaleReason: "old"}
			e := &Error{Class: ClassStaleLock, Cause: l}
			r.breakStale(e, l, Settings{StaleAfter: time.Minute})
			if !enabled {
				if e.Class != ClassStaleLock || !testutil.Exists(lock) || len(got) != 0 {
					t.Fatalf("disabled: class %s, lock exists %v, reports %v", e.Class, testutil.Exists(lock), got)
				}
				return
			}
			if e.Class != ClassLockContention || testutil.Exists(lock) || len(got) != 1 || got[0].Lock != lock {
				t.Fatalf("enabled: class %s, lock exists %v, reports %v", e.Class, testutil.Exists(lock), got)
			}
			want := "removed stale lock '" + lock + "' (age 1h0m0s): it is older than the stale-after limit of 1m0s; retrying"
			if s := got[0].String(); s != want {
				t.Errorf("line %q\nwant %q", s, want)
			}
		})
	}
}
