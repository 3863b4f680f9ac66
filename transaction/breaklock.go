package transaction

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/refretry/refretry/internal/text"

	"github.com/refretry/refretry/internal/platform"
)

// BrokenLock describes a stale lock that the Runner removed because BreakStaleLocks
// was set.
type BrokenLock struct {
	Lock    string        // the lock file removed
	PIDFile string        // its ~pid.lock, when that was removed too; "" otherwise
	Age     time.Duration // the lock's age when inspected
	PID     int           // the holder pid from the ~pid.lock file; 0 if there was none
	Reason  string        // why it was stale
}

// String is the one line refretry prints about the removal, without its "refretry: "
// prefix.
func (b BrokenLock) String() string {
	what := "removed stale lock " + text.ShellQuote(b.Lock)
	if b.PIDFile != "" {
		what += " and " + text.ShellQuote(b.PIDFile)
	}
	facts := []string{"age " + b.Age.Round(time.Second).String()}
	if b.PID > 0 {
		facts = append(facts, "holder pid "+strconv.Itoa(b.PID))
	}
	return what + " (" + strings.Join(facts, ", ") + "): " + b.Reason + "; retrying"
}

// Reasons breakLock leaves a lock in place.
var (
	errLockGone    = errors.New("the lock is gone")
	errLockChanged = errors.New("the lock was replaced while it was inspected")
)

// NotStaleError is why breakLock refused to remove a lock: its holder may be alive.
type NotStaleError struct{ Reason string }

func (e *NotStaleError) Error() string { return "not removed: " + e.Reason }

// breakLock removes lock, and its ~pid.lock, if and only if it is still stale when
// looked at again now: the ~pid.lock names a process that no longer exists on this
// host, or there is no live holder on record and the lock is older than staleAfter. A
// ~pid.lock naming a live process always protects the lock, whatever its age. Just
// before each removal the file is looked up again and removed only if it is the very
// file inspected (same device, inode, size and modification time), so a lock that a
// new holder took meanwhile is never touched.
//
// It returns errLockGone when there is no lock any more (the contention is over),
// errLockChanged when a different file now holds the name, a *NotStaleError when the
// lock is not provably stale, and any other error when the removal failed.
func breakLock(lock string, staleAfter time.Duration, now time.Time) (BrokenLock, error) {
	v, err := judgeLock(lock, staleAfter, now)
	if err != nil {
		return v.BrokenLock, err
	}
	return v.remove()
}

// verdict is a lock judged stale, with what was seen of it and its ~pid.lock.
type verdict struct {
	BrokenLock
	lockInfo fs.FileInfo
	pidInfo  fs.FileInfo // nil when there was no ~pid.lock
	pidPath  string
}

// judgeLock is breakLock's first half: whether lock is stale now, and what it is.
func judgeLock(lock string, staleAfter time.Duration, now time.Time) (verdict, error) {
	b := BrokenLock{Lock: lock}
	fi, err := os.Lstat(lock)
	if errors.Is(err, fs.ErrNotExist) {
		return verdict{BrokenLock: b}, errLockGone
	}
	if err != nil {
		return verdict{BrokenLock: b}, err
	}
	if !fi.Mode().IsRegular() {
		return verdict{BrokenLock: b}, &NotStaleError{Reason: "it is not a regular file"}
	}
	b.Age = now.Sub(fi.ModTime())
	pidPath := strings.TrimSuffix(lock, ".lock") + "~pid.lock"
	pfi, _ := os.Lstat(pidPath)
	pid, hasPID := readPIDFile(pidPath)
	switch {
	case hasPID && processGone(pid):
		b.PID = pid
		b.Reason = "its holder, process " + strconv.Itoa(pid) + " (from the ~pid.lock file), is no longer running"
	case hasPID:
		return verdict{BrokenLock: b}, &NotStaleError{Reason: "its ~pid.lock names process " + strconv.Itoa(pid) + ", which is running"}
	case staleAfter > 0 && b.Age > staleAfter:
		b.Reason = "it is older than the stale-after limit of " + staleAfter.String()
	default:
		return verdict{BrokenLock: b}, &NotStaleError{Reason: "its holder is not known to be gone and it is younger than the stale-after limit"}
	}
	return verdict{BrokenLock: b, lockInfo: fi, pidInfo: pfi, pidPath: pidPath}, nil
}

// remove is breakLock's second half: it removes the lock judged stale, and its
// ~pid.lock, if each is still the very file inspected.
func (v verdict) remove() (BrokenLock, error) {
	b, lock, fi, pidPath, pfi := v.BrokenLock, v.Lock, v.lockInfo, v.pidPath, v.pidInfo
	again, err := os.Lstat(lock)
	if errors.Is(err, fs.ErrNotExist) {
		return b, errLockGone
	}
	if err != nil {
		return b, err
	}
	if !sameFile(fi, again) {
		return b, errLockChanged
	}
	if err := os.Remove(lock); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return b, errLockGone
		}
		return b, fmt.Errorf("removing %s: %w", lock, err)
	}
	if pfi != nil {
		// The ~pid.lock goes only if it is still the one read above: a new holder
		// may already have taken the lock and written its own.
		if p2, err := os.Lstat(pidPath); err == nil && sameFile(pfi, p2) && os.Remove(pidPath) == nil {
			b.PIDFile = pidPath
		}
	}
	return b, nil
}

// sameFile reports whether two stats are of the same, unchanged file.
func sameFile(a, b fs.FileInfo) bool {
	if !os.SameFile(a, b) || a.Size() != b.Size() || !a.ModTime().Equal(b.ModTime()) {
		return false
	}
	ac, aok := platform.ChangeTime(a)
	bc, bok := platform.ChangeTime(b)
	return aok == bok && ac.Equal(bc)
}

// breakStale is checkStale's hook: when BreakStaleLocks (or the settings) ask for it,
// a lock found stale is removed and the failure becomes lock contention again, so
// that the retry loop runs the update once more. When the lock cannot be removed the
// failure stays a stale-lock one, and says why.
func (r *run) breakStale(e *Error, l *LockedError, s Settings) {
	if !r.BreakStaleLocks && !s.BreakStaleLocks || l.Lock == "" || !strings.HasSuffix(l.Lock, ".lock") {
		return
	}
	b, err := breakLock(l.Lock, s.StaleAfter, time.Now())
	var ns *NotStaleError
	switch {
	case err == nil:
		if r.OnBreakLock != nil {
			r.OnBreakLock(b)
		} else if r.Stderr != nil {
			fmt.Fprintf(r.Stderr, "refretry: %s\n", b)
		}
	case errors.Is(err, errLockGone), errors.Is(err, errLockChanged):
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
