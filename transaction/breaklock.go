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
	if !r.BreakStaleLocks && !s.BreakStaleLocks || l.Lock == "" || !strings.HasSuffix(l.Lock, ".lock") {
		return
	}
	b, again, why := lockfile.TryBreak(l.Lock, s.rule(), time.Now())
	if !again {
		l.StaleReason += " (" + why + ")"
		return
	}
	switch {
	case b == nil:
		// Someone else removed it, or a live writer holds it now: plain contention.
	case r.OnBreakLock != nil:
		r.OnBreakLock(*b)
	case r.Stderr != nil:
		fmt.Fprintf(r.Stderr, "refretry: %s\n", b)
	}
	e.Class = ClassLockContention
	l.Stale, l.StaleReason = false, ""
}
