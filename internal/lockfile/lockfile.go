// Package lockfile judges git's lock files (`<name>.lock`, with the `<name>~pid.lock`
// holder file git 2.53+ may write beside it): how old a held lock is, who holds it, and
// whether its holder is known to be gone. It removes a lock only when it is still the
// very file judged stale. Every refretry command that meets a held lock (update-ref,
// fetch) asks here, so the rule for calling a lock stale is written once.
package lockfile

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/refretry/refretry/internal/platform"
	"github.com/refretry/refretry/internal/text"
)

// Facts are what the file system says about a held lock.
type Facts struct {
	Present bool          // the lock was there when looked at
	Age     time.Duration // since its last modification
	PID     int           // its holder, from the ~pid.lock file; 0 when none was readable
	Stale   bool          // its holder is known to be gone
	Reason  string        // why it is stale, in words; "" when it is not
}

// Inspect looks at lock now. A lock whose ~pid.lock names a process this host does not
// have, or one older than staleAfter (when staleAfter > 0), is stale. A lock that is not
// there is not stale: the contention it caused is over.
func Inspect(lock string, staleAfter time.Duration, now time.Time) Facts {
	var f Facts
	fi, err := os.Stat(lock)
	if err != nil {
		return f
	}
	f.Present, f.Age = true, now.Sub(fi.ModTime())
	if pid, ok := readPIDFile(PIDFile(lock)); ok {
		f.PID = pid
		if platform.ProcessGone(pid) {
			f.Stale, f.Reason = true, deadHolder(pid)
		}
	}
	if !f.Stale && staleAfter > 0 && f.Age > staleAfter {
		f.Stale, f.Reason = true, tooOld(staleAfter)
	}
	return f
}

// PIDFile is the holder file git writes beside lock: "x.lock" has "x~pid.lock".
func PIDFile(lock string) string { return strings.TrimSuffix(lock, ".lock") + "~pid.lock" }

func deadHolder(pid int) string {
	return "its holder, process " + strconv.Itoa(pid) + " (from the ~pid.lock file), is no longer running"
}

func tooOld(staleAfter time.Duration) string {
	return "it is older than the stale-after limit of " + staleAfter.String()
}

// Broken describes a stale lock that was removed.
type Broken struct {
	Lock    string        // the lock file removed
	PIDFile string        // its ~pid.lock, when that was removed too; "" otherwise
	Age     time.Duration // the lock's age when inspected
	PID     int           // the holder pid from the ~pid.lock file; 0 if there was none
	Reason  string        // why it was stale
}

// String is the one line refretry prints about the removal, without its "refretry: "
// prefix.
func (b Broken) String() string {
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

// Reasons Break leaves a lock in place without it being live.
var (
	ErrGone    = errors.New("the lock is gone")
	ErrChanged = errors.New("the lock was replaced while it was inspected")
)

// NotStaleError is why Break refused to remove a lock: its holder may be alive.
type NotStaleError struct{ Reason string }

func (e *NotStaleError) Error() string { return "not removed: " + e.Reason }

// Break removes lock, and its ~pid.lock, if and only if it is still stale when looked
// at again now: the ~pid.lock names a process that no longer exists on this host, or
// there is no live holder on record and the lock is older than staleAfter. A ~pid.lock
// naming a live process always protects the lock, whatever its age. Just before each
// removal the file is looked up again and removed only if it is the very file inspected
// (same device, inode, size and modification time), so a lock that a new holder took
// meanwhile is never touched.
//
// It returns ErrGone when there is no lock any more (the contention is over),
// ErrChanged when a different file now holds the name, a *NotStaleError when the lock
// is not provably stale, and any other error when the removal failed.
func Break(lock string, staleAfter time.Duration, now time.Time) (Broken, error) {
	v, err := Judge(lock, staleAfter, now)
	if err != nil {
		return v.Broken, err
	}
	return v.Remove()
}

// Verdict is a lock judged stale, with what was seen of it and its ~pid.lock.
type Verdict struct {
	Broken
	lockInfo fs.FileInfo
	pidInfo  fs.FileInfo // nil when there was no ~pid.lock
	pidPath  string
}

// Judge is Break's first half: whether lock is stale now, and what it is.
func Judge(lock string, staleAfter time.Duration, now time.Time) (Verdict, error) {
	b := Broken{Lock: lock}
	fi, err := os.Lstat(lock)
	if errors.Is(err, fs.ErrNotExist) {
		return Verdict{Broken: b}, ErrGone
	}
	if err != nil {
		return Verdict{Broken: b}, err
	}
	if !fi.Mode().IsRegular() {
		return Verdict{Broken: b}, &NotStaleError{Reason: "it is not a regular file"}
	}
	b.Age = now.Sub(fi.ModTime())
	pidPath := PIDFile(lock)
	pfi, _ := os.Lstat(pidPath)
	pid, hasPID := readPIDFile(pidPath)
	switch {
	case hasPID && platform.ProcessGone(pid):
		b.PID = pid
		b.Reason = deadHolder(pid)
	case hasPID:
		return Verdict{Broken: b}, &NotStaleError{Reason: "its ~pid.lock names process " + strconv.Itoa(pid) + ", which is running"}
	case staleAfter > 0 && b.Age > staleAfter:
		b.Reason = tooOld(staleAfter)
	default:
		return Verdict{Broken: b}, &NotStaleError{Reason: "its holder is not known to be gone and it is younger than the stale-after limit"}
	}
	return Verdict{Broken: b, lockInfo: fi, pidInfo: pfi, pidPath: pidPath}, nil
}

// Remove is Break's second half: it removes the lock judged stale, and its ~pid.lock,
// if each is still the very file inspected.
func (v Verdict) Remove() (Broken, error) {
	b, lock, fi, pidPath, pfi := v.Broken, v.Lock, v.lockInfo, v.pidPath, v.pidInfo
	again, err := os.Lstat(lock)
	if errors.Is(err, fs.ErrNotExist) {
		return b, ErrGone
	}
	if err != nil {
		return b, err
	}
	if !sameFile(fi, again) {
		return b, ErrChanged
	}
	if err := os.Remove(lock); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return b, ErrGone
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

// sameFile reports whether two stats are of the same, unchanged file.
func sameFile(a, b fs.FileInfo) bool {
	if !os.SameFile(a, b) || a.Size() != b.Size() || !a.ModTime().Equal(b.ModTime()) {
		return false
	}
	ac, aok := platform.ChangeTime(a)
	bc, bok := platform.ChangeTime(b)
	return aok == bok && ac.Equal(bc)
}

// TryBreak is Break for a caller about to retry: again is true when the lock was
// removed (removed says what went) or is no longer the stale file judged (gone, or
// taken by a new holder: plain contention again). Otherwise why says, in a few words,
// why the lock stays ("not removed: …", "could not remove it: …").
func TryBreak(lock string, staleAfter time.Duration, now time.Time) (removed *Broken, again bool, why string) {
	b, err := Break(lock, staleAfter, now)
	var ns *NotStaleError
	switch {
	case err == nil:
		return &b, true, ""
	case errors.Is(err, ErrGone), errors.Is(err, ErrChanged):
		return nil, true, ""
	case errors.As(err, &ns):
		return nil, false, ns.Error()
	}
	return nil, false, "could not remove it: " + err.Error()
}
