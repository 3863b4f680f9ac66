package transaction

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/refretry/refretry/internal/text"
)

// Class names what kind of failure git reported. Only ClassLockContention is retried.
type Class string

const (
	ClassLockContention Class = "lock-contention" // another writer holds a lock: retry
	ClassStaleLock      Class = "stale-lock"      // a lock or leftover whose holder is gone
	ClassConflict       Class = "conflict"        // the refs are not as the update expects
	ClassInvalidInput   Class = "invalid-input"   // usage, parse, name or object errors
	ClassOther          Class = "other"           // everything else, including the unknown
)

// Error is a failed git update-ref run. Cause, when not nil, is the typed detail
// (*LockedError, *StaleValueError, *RefConflictError).
type Error struct {
	ExitCode int
	Class    Class
	// Message is git's final error message with its entry-point prefix removed.
	Message string
	Cause   error
}

func (e *Error) Error() string {
	return fmt.Sprintf("git update-ref exited %d (%s): %s", e.ExitCode, e.Class, text.FirstLine(e.Message))
}

func (e *Error) Unwrap() error { return e.Cause }

// LockedError says a lock was held by someone else.
type LockedError struct {
	// Lock is the lock file's path as git printed it; for reftable's message, which
	// names no file, the path of tables.list.lock once found (else empty).
	Lock string
	// Ref is the ref git was locking, when the message names it.
	Ref string
	// PID is the holder's pid from git's advice or the ~pid.lock file (0 if unknown).
	PID int
	// HolderUnseen is set when no process with PID runs in refretry's pid namespace:
	// the holder ended, or it runs in another pid namespace (another container, or
	// the host seen from one), where it may still be working. git's "no longer
	// running" advice says no more than this.
	HolderUnseen bool
	// Waiting says why a lock whose holder is unseen is still waited for (it is
	// younger than the pid grace); "" otherwise.
	Waiting string
	// Age is how long the lock file had existed when inspected (0 if unknown).
	Age time.Duration
	// Stale is set when the lock counts as stale (lockfile.Rule); StaleReason says
	// why.
	Stale       bool
	StaleReason string
	// Remote is set for a lock on a push's receiving side, as its remote: lines
	// report it (package push); Lock is then the server's path.
	Remote bool
}

func (e *LockedError) Error() string {
	what := e.Lock
	if what == "" {
		what = "references"
	}
	if e.Remote {
		what += " on the remote"
	}
	if e.Stale {
		return fmt.Sprintf("stale lock %s: %s", what, e.StaleReason)
	}
	return fmt.Sprintf("lock %s is held", what)
}

// StaleValueError is a compare-and-swap failure: the ref is not at the expected value.
type StaleValueError struct {
	Ref      string
	Actual   string
	Expected string
}

func (e *StaleValueError) Error() string {
	return fmt.Sprintf("ref %s is at %s but expected %s", e.Ref, e.Actual, e.Expected)
}

// RefConflictError is any other failed precondition on a ref: it exists, is missing,
// or conflicts with another ref's name.
type RefConflictError struct {
	Ref    string
	Reason string
}

func (e *RefConflictError) Error() string {
	if e.Ref == "" {
		return e.Reason
	}
	return fmt.Sprintf("ref %s: %s", e.Ref, e.Reason)
}

// Exit is git's exit code.
func (e *Error) Exit() int { return e.ExitCode }

// Kind is the failure's class as text.
func (e *Error) Kind() string { return string(e.Class) }

// Line is the first line of git's message.
func (e *Error) Line() string { return text.FirstLine(e.Message) }

// Reason is the failure in a few words: "lock-contention on <lock>", or the class and
// git's first line.
func (e *Error) Reason() string {
	var l *LockedError
	if errors.As(e, &l) && l.Lock != "" {
		return fmt.Sprintf("%s on %s", e.Class, l.Lock)
	}
	return fmt.Sprintf("%s: %s", e.Class, e.Line())
}

// Held is the lock another process holds, when the failure is one.
func (e *Error) Held() (lock string, age time.Duration, pid int) {
	var l *LockedError
	if errors.As(e, &l) {
		return l.Lock, l.Age, l.PID
	}
	return "", 0, 0
}

// HolderUnseen reports that the held lock's holder pid is not running in refretry's
// pid namespace (LockedError.HolderUnseen).
func (e *Error) HolderUnseen() bool {
	var l *LockedError
	return errors.As(e, &l) && l.HolderUnseen
}

// Advice says, for a stale lock, whose it is, how old, and how to remove it; for a
// held lock whose holder pid is not running here, why it was still waited for. git's
// own message says all there is to say about any other failure ("").
func (e *Error) Advice() string {
	var l *LockedError
	if !errors.As(e, &l) {
		return ""
	}
	switch e.Class {
	case ClassStaleLock:
		return l.StaleAdvice()
	case ClassLockContention:
		return l.WaitAdvice()
	}
	return ""
}

// StaleAdvice is refretry's line about a stale lock: whose it is, how old, why it is
// stale, and how to remove it.
func (l *LockedError) StaleAdvice() string {
	msg := "stale lock " + l.Lock + l.facts() + ": " + l.StaleReason
	if l.Lock != "" {
		msg += "; make sure no git process is using this repository, then remove it: rm -f " + text.ShellQuote(l.Lock)
		if pidFile := pidFileOf(l.Lock); pidFile != "" {
			msg += " " + text.ShellQuote(pidFile)
		}
	}
	return msg
}

// WaitAdvice is refretry's line about a held lock whose holder pid is not running
// here: why it was still waited for (Waiting); "" for any other lock.
func (l *LockedError) WaitAdvice() string {
	if l.Waiting == "" {
		return ""
	}
	return "lock " + l.Lock + l.facts() + ": " + l.Waiting
}

// facts is " (age …, holder pid …)", with what is known; "" when nothing is.
func (l *LockedError) facts() string {
	var facts []string
	if l.Age > 0 {
		facts = append(facts, "age "+l.Age.Round(time.Second).String())
	}
	if l.PID > 0 {
		facts = append(facts, fmt.Sprintf("holder pid %d", l.PID))
	}
	if len(facts) == 0 {
		return ""
	}
	return " (" + strings.Join(facts, ", ") + ")"
}

// pidFileOf returns the ~pid.lock companion of a lock when it exists.
func pidFileOf(lock string) string {
	p, ok := strings.CutSuffix(lock, ".lock")
	if !ok {
		return ""
	}
	p += "~pid.lock"
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return p
}
