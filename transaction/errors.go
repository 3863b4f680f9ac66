package transaction

import (
	"fmt"
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
	// Age is how long the lock file had existed when inspected (0 if unknown).
	Age time.Duration
	// Stale is set when the holder is known to be gone; StaleReason says how.
	Stale       bool
	StaleReason string
}

func (e *LockedError) Error() string {
	what := e.Lock
	if what == "" {
		what = "references"
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
