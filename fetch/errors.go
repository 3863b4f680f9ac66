package fetch

import (
	"errors"
	"fmt"
	"time"

	"github.com/refretry/refretry/internal/gitexec"
	"github.com/refretry/refretry/transaction"
)

// Class names what kind of failure a fetch attempt ended with.
type Class string

const (
	ClassLockContention Class = "lock-contention" // a local lock was held: retry
	ClassLostRace       Class = "lost-race"       // another process moved a ref during the fetch: retry
	ClassTransport      Class = "transport"       // the connection failed or stalled: retry
	ClassStaleLock      Class = "stale-lock"      // a local lock whose holder is gone
	ClassRejected       Class = "rejected"        // a local ref refused the update (non-fast-forward, tag clobber, …)
	ClassDeclined       Class = "declined"        // a reference-transaction hook refused the update
	ClassNotFound       Class = "not-found"       // no such repository, remote or ref
	ClassAuth           Class = "auth"            // authentication or permission failure
	ClassUsage          Class = "usage"           // git fetch rejected its arguments
	ClassOther          Class = "other"           // anything else, including the unknown
)

// Retryable reports whether a failure of class c may succeed on another identical
// attempt.
func (c Class) Retryable() bool {
	return c == ClassLockContention || c == ClassLostRace || c == ClassTransport
}

// Error is a failed fetch attempt. Cause, when not nil, is the typed detail: a
// *LockedError for lock contention and stale locks, a *MovedError for a lost race.
type Error struct {
	ExitCode int
	Class    Class
	// Message is the line of git's that decided the class.
	Message string
	Cause   error
	// Wait is how long the server asked to wait before the next request (a 429's
	// Retry-After, as git 2.54+ reports it); 0 when it did not say.
	Wait time.Duration
}

// RetryAfter is Wait: the retry loop starts no attempt sooner (retry.Waiter).
func (e *Error) RetryAfter() time.Duration { return e.Wait }

func (e *Error) Error() string {
	return fmt.Sprintf("git fetch exited %d (%s): %s", e.ExitCode, e.Class, e.Message)
}

func (e *Error) Unwrap() error { return e.Cause }

// LockedError is a held local lock: the same type update-ref reports. Lock is empty
// for reftable's message, which names no file, until the Runner finds the stack's
// tables.list.lock.
type LockedError = transaction.LockedError

// MovedError is a local ref that another process moved while this fetch ran.
type MovedError struct {
	Ref      string
	Actual   string // the value the ref had when this fetch went to update it ("" when git did not say)
	Expected string // the value this fetch read at its start ("" when git did not say)
}

func (e *MovedError) Error() string {
	if e.Actual == "" && e.Expected == "" { // git 2.51–2.53 name no values
		return e.Ref + " was changed by another process during the fetch"
	}
	return fmt.Sprintf("%s moved during the fetch: is at %s but expected %s", e.Ref, e.Actual, e.Expected)
}

// ErrGitNotFound is matched (errors.Is) by the error returned when git cannot be
// started: a *StartError.
var ErrGitNotFound = gitexec.ErrNotFound

// StartError is why git could not be started; Unwrap gives the system's reason.
type StartError = gitexec.StartError

// Exit is git's exit code.
func (e *Error) Exit() int { return e.ExitCode }

// Kind is the failure's class as text.
func (e *Error) Kind() string { return string(e.Class) }

// Line is the line that decided the class.
func (e *Error) Line() string { return e.Message }

// Reason is the failure in a few words, naming the lock for contention.
func (e *Error) Reason() string {
	var l *LockedError
	if errors.As(e, &l) && l.Lock != "" {
		return fmt.Sprintf("%s on %s", e.Class, l.Lock)
	}
	return fmt.Sprintf("%s: %s", e.Class, e.Message)
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
// output says all there is to say about any other failure ("").
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
