package push

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/refretry/refretry/internal/gitexec"
	"github.com/refretry/refretry/internal/replay"
	"github.com/refretry/refretry/transaction"
)

// Class names what kind of failure a push attempt ended with.
type Class string

const (
	ClassLockContention Class = "lock-contention" // the server could not take a ref lock: retry
	ClassTransport      Class = "transport"       // the connection failed or stalled: retry
	ClassRace           Class = "race"            // the server saw another update of the same ref land first (created or deleted it): verified, then retried
	ClassUnknown        Class = "unknown-outcome" // the server failed while committing (a forge's "failure", a 5xx in the ref phase): verified, then retried
	ClassBehind         Class = "behind"          // non-fast-forward or fetch first
	ClassRejected       Class = "rejected"        // any other per-ref refusal (stale info, already exists, …)
	ClassDeclined       Class = "declined"        // a server policy or hook refused the update
	ClassStaleLock      Class = "stale-lock"      // the server's lock belongs to a dead process
	ClassAuth           Class = "auth"            // authentication or permission failure
	ClassUsage          Class = "usage"           // git push rejected its arguments
	ClassOther          Class = "other"           // anything else, including the unknown
)

// Retryable reports whether a failure of class c may succeed on another identical
// attempt. ClassBehind is not: it needs a rebase first.
func (c Class) Retryable() bool {
	return c == ClassLockContention || c == ClassTransport || c == ClassRace || c == ClassUnknown
}

// unsure reports whether a failure of class c may have been applied, or may have been
// answered after another copy of the same request was: the remote is compared with
// what was pushed before anything else is done.
func (c Class) unsure() bool { return c == ClassTransport || c == ClassRace || c == ClassUnknown }

// Error is a failed push attempt. Cause, when not nil, is the typed detail
// (*RejectedError, *LockedError, *TransportError).
type Error struct {
	ExitCode int
	Class    Class
	// Refs are the per-ref outcomes git printed; empty when it printed none.
	Refs []RefStatus
	// classes are the classes of Refs, "" for refs that did not fail or failed only
	// because another did.
	classes []Class
	// URL is the remote's URL from the porcelain "To <url>" line, if any.
	URL string
	// Message is the line that decided the class: a rejection or git's error message.
	Message string
	// Policy is what the server said about a refusal by one of its rules (GitHub's
	// GH006 and GH013, GitLab's and Gitea's protected branches): its remote: lines, in
	// order, without the blank ones. Empty for anything else.
	Policy []string
	Cause  error
}

func (e *Error) Error() string {
	return fmt.Sprintf("git push exited %d (%s): %s", e.ExitCode, e.Class, e.Message)
}

func (e *Error) Unwrap() error { return e.Cause }

// RejectedError is one ref the push did not update.
type RejectedError struct {
	Ref    string // the destination ref
	From   string // the source as git printed it ("" for a deletion)
	Reason string // git's reason, as in "(fetch first)"
	Remote bool   // the server refused it ("[remote rejected]"), not the client
}

func (e *RejectedError) Error() string {
	who := "rejected"
	if e.Remote {
		who = "remote rejected"
	}
	return fmt.Sprintf("%s %s (%s)", who, e.Ref, e.Reason)
}

// LockedError is a server-side lock failure, as the server's `remote:` lines show it:
// transaction's lock error with Remote set. Lock is empty for reftable, whose message
// names no file; Age is not known; PID is the holder's when the server's advice names
// one.
type LockedError = transaction.LockedError

// MovedError is a ref that another push moved between the advertisement this push
// was based on and the server's update: the server's compare-and-swap failed.
type MovedError struct {
	Ref      string
	Actual   string // the value the server found
	Expected string // the value this push expected, from the advertisement
}

func (e *MovedError) Error() string {
	return fmt.Sprintf("remote %s moved during the push: is at %s but expected %s", e.Ref, replay.Short(e.Actual), replay.Short(e.Expected))
}

// TransportError is a connection failure, a stall or a retryable HTTP status.
type TransportError struct {
	HTTPStatus int    // 0 when none was reported
	Message    string // git's line that showed it
	// Wait is how long the server asked to wait (a 429's Retry-After, as git 2.54+
	// reports it); 0 when it did not say.
	Wait time.Duration
}

func (e *TransportError) Error() string { return e.Message }

// RetryAfter is Wait: the retry loop starts no attempt sooner (retry.Waiter).
func (e *TransportError) RetryAfter() time.Duration { return e.Wait }

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

// Reason is the failure in a few words, naming the remote's lock for contention.
func (e *Error) Reason() string {
	var l *LockedError
	if e.Class == ClassLockContention && errors.As(e, &l) {
		if l.Lock != "" {
			return fmt.Sprintf("%s on the remote's %s: %s", e.Class, l.Lock, e.Message)
		}
		return fmt.Sprintf("%s on the remote's references: %s", e.Class, e.Message)
	}
	return fmt.Sprintf("%s: %s", e.Class, e.Message)
}

// Held is the remote's lock, when the failure is one; its age is not known here.
func (e *Error) Held() (lock string, age time.Duration, pid int) {
	var l *LockedError
	if errors.As(e, &l) {
		return l.Lock, 0, l.PID
	}
	return "", 0, 0
}

// HolderUnseen is false: a pid in the server's message is the server's to judge.
func (e *Error) HolderUnseen() bool { return false }

// Advice says, for a stale lock on the remote, that it must be removed there; for a
// refusal by the remote's rules, what the rule says (once, in one line); for a remote
// without atomic pushes, how to push without; git's output says all there is to say
// about any other failure ("").
func (e *Error) Advice() string {
	if e.Class == ClassDeclined && len(e.Policy) > 0 {
		return "the remote's rules refused the push, so refretry did not retry: " + strings.Join(e.Policy, " ")
	}
	if e.Class == ClassDeclined && strings.Contains(e.Message, "does not support --atomic push") {
		return "the remote does not support atomic pushes; push with refretry push --no-atomic " +
			"(each ref is then accepted or refused on its own)"
	}
	var l *LockedError
	if e.Class != ClassStaleLock || !errors.As(e, &l) {
		return ""
	}
	return fmt.Sprintf("the remote's lock %s was held by process %d, which is gone; "+
		"it must be removed on the server, so refretry did not retry", l.Lock, l.PID)
}
