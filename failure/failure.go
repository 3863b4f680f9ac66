// Package failure is what a failed git command said, as plain data: its class, git's
// exit code and the line that decided the class, the lock it names with what was seen
// of that lock, and the ref that moved with its two values. transaction (git
// update-ref), push and fetch report every failure with one type, Error.
//
// These are observations, not actions: nothing here reads or changes the file system.
// Whether a lock counts as stale, and removing it, is judged elsewhere (refretry's
// lockfile rule), which fills in what it saw.
package failure

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// ErrGitNotFound is matched (errors.Is) by the error a Runner's Run returns, in every
// package of refretry, when git cannot be started: the executable is missing or not
// executable, or the system refused a new process.
var ErrGitNotFound = errors.New("git could not be started")

// ExitGitNotFound is the exit code of a run whose git could not be started, as a
// shell's for a command it could not run.
const ExitGitNotFound = 127

// ExitCode is the one rule for the exit code every Runner's Result gives, and
// refretry exits with: ExitGitNotFound when err matches ErrGitNotFound, else code (the
// run's own: git's final one, as a rule).
func ExitCode(code int, err error) int {
	if errors.Is(err, ErrGitNotFound) {
		return ExitGitNotFound
	}
	return code
}

// Class is what kind of failure a command ended with. Each command uses the classes
// that fit it; Retryable says which another identical attempt may get past.
type Class string

const (
	LockContention Class = "lock-contention" // another process holds a lock
	StaleLock      Class = "stale-lock"      // a lock whose holder is gone, or a leftover
	Transport      Class = "transport"       // the connection failed, stalled, or was refused for now (5xx, 429)
	LostRace       Class = "lost-race"       // fetch: another process moved a local ref during the fetch
	Race           Class = "race"            // push: another update of the same ref landed on the server first
	Unknown        Class = "unknown-outcome" // push: the server failed while committing; it may have applied the push
	Behind         Class = "behind"          // push: the remote moved the branch; a rebase or a regeneration cures it
	Conflict       Class = "conflict"        // update-ref: the refs are not as the update expects
	InvalidInput   Class = "invalid-input"   // update-ref: usage, parse, name or object errors
	Rejected       Class = "rejected"        // a ref refused the update (non-fast-forward, exists, …)
	Declined       Class = "declined"        // a hook or a server's rule refused the update
	NotFound       Class = "not-found"       // no such repository, remote or ref
	Auth           Class = "auth"            // authentication or permission
	Usage          Class = "usage"           // git rejected its arguments (exit 129)
	Rebase         Class = "rebase"          // push --rebase could not put the commits on the remote's tip (a conflict)
	Regenerate     Class = "regenerate"      // push --regenerate's command failed
	Signing        Class = "signing"         // a commit push had to sign (a replay, a regeneration) could not be signed
	Other          Class = "other"           // anything else, the unknown included
)

// Retryable reports whether a failure of class c may succeed on another identical
// attempt. Behind is not: it needs a cure first.
func (c Class) Retryable() bool {
	switch c {
	case LockContention, Transport, LostRace, Race, Unknown:
		return true
	}
	return false
}

// Error is one failed attempt of a git command.
type Error struct {
	Command  string // "update-ref", "push", "fetch"
	Class    Class
	ExitCode int
	// Message is the line of git's that decided the class (for update-ref, git's final
	// message with its prefix removed, and the advice lines after it).
	Message string
	// Ref is the ref the failure is about, when git named one.
	Ref string
	// Lock is the lock git named (lock contention, a stale lock), with what was seen
	// of it; nil otherwise.
	Lock *Lock
	// Moved is a ref that another process moved under this command (a failed
	// compare-and-swap); nil otherwise.
	Moved *Moved
	// Wait is how long the server asked to wait before the next request (a 429's
	// Retry-After, as git 2.54+ reports it); 0 when it did not say.
	Wait time.Duration
	// Refused is set for a transport failure where nothing accepted the connection
	// (refused, no server listening at that address): the attempt never reached the
	// remote.
	Refused bool
	// Policy is what a server's rule said when it refused the update (GitHub's GH006
	// and GH013, a protected branch): its lines, without blank ones.
	Policy []string
	// Advice is refretry's own line about this failure when it ends the run and git's
	// output does not explain it (a stale lock: whose, how old, how to remove it).
	Advice string
	// Cause is further detail, when there is any (a rejected ref, a rebase conflict).
	Cause error
}

func (e *Error) Error() string {
	line, _, _ := strings.Cut(e.Message, "\n")
	return fmt.Sprintf("git %s exited %d (%s): %s", e.Command, e.ExitCode, e.Class, line)
}

func (e *Error) Unwrap() error { return e.Cause }

// RetryAfter is Wait: a retry loop starts no attempt sooner (retry.Waiter).
func (e *Error) RetryAfter() time.Duration { return e.Wait }

// Line is the first line of Message.
func (e *Error) Line() string {
	line, _, _ := strings.Cut(e.Message, "\n")
	return line
}

// Lock is a lock file another process held, as git named it and as it was seen.
type Lock struct {
	// Path is the lock file's path as git printed it (a server's path when Remote);
	// for reftable's message, which names no file, the path of tables.list.lock once
	// found, else empty.
	Path string
	// Ref is the ref git was locking, when the message names it.
	Ref string
	// Remote is set for a lock on a push's receiving side.
	Remote bool
	// PID is the holder's pid, from git's advice or the lock's ~pid.lock file; 0 when
	// unknown. PIDFile is that ~pid.lock file, when there is one.
	PID     int
	PIDFile string
	// HolderUnseen is set when no process with PID runs in refretry's pid namespace:
	// the holder ended, or it runs in another one (another container), where it may
	// still be working.
	HolderUnseen bool
	// Age is how long the lock file had existed when it was looked at; 0 when unknown.
	Age time.Duration
	// Stale is set when the lock counts as stale; StaleReason says why.
	Stale       bool
	StaleReason string
	// Waiting says why a lock whose holder is unseen was still waited for (it is
	// younger than the pid grace); empty otherwise.
	Waiting string
}

func (l *Lock) Error() string {
	what := l.Path
	if what == "" {
		what = "references"
	}
	if l.Remote {
		what += " on the remote"
	}
	if l.Stale {
		return fmt.Sprintf("stale lock %s: %s", what, l.StaleReason)
	}
	return fmt.Sprintf("lock %s is held", what)
}

// Moved is a ref another process moved: it is at Actual, where this command expected
// Expected (either is empty when git did not say).
type Moved struct {
	Ref      string
	Actual   string
	Expected string
}

func (m *Moved) Error() string {
	if m.Actual == "" && m.Expected == "" {
		return m.Ref + " was changed by another process"
	}
	return fmt.Sprintf("%s is at %s but expected %s", m.Ref, m.Actual, m.Expected)
}
