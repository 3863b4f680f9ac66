package transaction

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/refretry/refretry/internal/lockfile"
)

// BrokenLock describes a stale lock that the Runner removed because BreakStaleLocks
// was set. Its String method is the line refretry prints about the removal.
type BrokenLock = lockfile.Broken

// NotStaleError is why a lock was not removed: its holder may be alive.
type NotStaleError = lockfile.NotStaleError

// breakStale is checkStale's hook: when BreakStaleLocks (or the settings) ask for it,
// a lock found stale is removed and the failure becomes lock contention again, so
// that the retry loop runs the update once more. When the lock cannot be removed the
// failure stays a stale-lock one, and says why.
func (r *run) breakStale(e *Error, l *LockedError, s Settings) {
	if !r.BreakStaleLocks && !s.BreakStaleLocks || l.Lock == "" || !strings.HasSuffix(l.Lock, ".lock") {
		return
	}
	b, err := lockfile.Break(l.Lock, s.rule(), time.Now())
	var ns *NotStaleError
	switch {
	case err == nil:
		if r.OnBreakLock != nil {
			r.OnBreakLock(b)
		} else if r.Stderr != nil {
			fmt.Fprintf(r.Stderr, "refretry: %s\n", b)
		}
	case errors.Is(err, lockfile.ErrGone), errors.Is(err, lockfile.ErrChanged):
		// Someone else removed it, or a live writer holds it now: plain contention.
	case errors.As(err, &ns):
		l.StaleReason += " (" + ns.Error() + ")"
		return
	default:
		l.StaleReason += " (could not remove it: " + err.Error() + ")"
		return
	}
	e.Class = ClassLockContention
	l.Stale, l.StaleReason = false, ""
}
