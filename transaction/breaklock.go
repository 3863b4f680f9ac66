package transaction

import (
	"fmt"
	"strings"
	"time"

	"github.com/refretry/refretry/internal/lockfile"
)

// BrokenLock describes a stale lock that the Runner removed because BreakStaleLocks
// was set. Its String method is the line refretry prints about the removal.
type BrokenLock = lockfile.Broken

// breakStale is checkStale's hook: when BreakStaleLocks (or the settings) ask for it,
// a lock found stale is removed and the failure becomes lock contention again, so
// that the retry loop runs the update once more. When the lock cannot be removed the
// failure stays a stale-lock one, and says why.
func (r *run) breakStale(e *Error, l *LockedError, s Settings) {
	if !r.BreakStaleLocks && !s.BreakStaleLocks {
		return
	}
	removed := r.OnBreakLock
	if removed == nil {
		removed = func(b BrokenLock) {
			if r.Stderr != nil {
				fmt.Fprintf(r.Stderr, "refretry: %s\n", b)
			}
		}
	}
	if l.BreakStale(s, removed) {
		e.Class = ClassLockContention
	}
}

// BreakStale removes l's lock, judged stale, if it still is under s's rule and is
// still the very file judged (lockfile.TryBreak), telling removed of a removal. It
// reports whether l is contention again: the lock was removed, or is gone or taken
// by a new holder meanwhile; l is then no longer stale. Otherwise l stays stale and
// its StaleReason says why the lock stays.
func (l *LockedError) BreakStale(s Settings, removed func(BrokenLock)) bool {
	if l.Lock == "" || !strings.HasSuffix(l.Lock, ".lock") {
		return false
	}
	b, again, why := lockfile.TryBreak(l.Lock, s.rule(), time.Now())
	if !again {
		l.StaleReason += " (" + why + ")"
		return false
	}
	if b != nil {
		removed(*b)
	}
	l.Stale, l.StaleReason = false, ""
	return true
}
