// Package report is the operation layer every refretry command reports through: one
// line per retry and one about how the run ended in refretry's plain form, or attempt
// and summary records in a ci format (ci/), with git's stderr relayed so that nothing
// it prints can start a CI command.
//
// A command gives it the retry loop's attempts and its run's outcome. Failures are read
// through [Failure], which the error types of transaction and push implement; the
// retry loop's own errors (a budget spent, a bad setting) and git that could not be
// started are read here.
package report

import (
	"errors"
	"time"

	"github.com/refretry/refretry/internal/gitexec"
	"github.com/refretry/refretry/retry"
)

// Failure is a failed attempt as the reports need it: transaction.Error,
// push.Error and push.RebaseError implement it.
type Failure interface {
	error
	// Exit is git's exit code.
	Exit() int
	// Kind is the failure's class, as the records name it ("lock-contention", …).
	Kind() string
	// Line is the one line of git's that decided the failure.
	Line() string
	// Reason is the failure in a few words, for a retry line.
	Reason() string
	// Held is the lock another process holds, when that is the failure: its path
	// (empty when unknown), its age and its holder's pid (0 when unknown).
	Held() (lock string, age time.Duration, pid int)
	// HolderUnseen reports that no process with the pid Held names runs in
	// refretry's pid namespace: the holder ended, or it runs in another one.
	HolderUnseen() bool
	// Advice is refretry's own line about a final failure that git's output does not
	// explain (a stale lock: whose, how old, how to remove it); empty when git's
	// output says it all.
	Advice() string
}

// Exit codes of refretry's own failures; git's codes pass through unchanged.
const (
	ExitFatal      = 128 // as git's die()
	ExitGitMissing = 127 // as a shell's "command not found"
)

// reason is a one-line reason for any error an attempt or run ended with.
func reason(err error) string {
	var f Failure
	if errors.As(err, &f) {
		return f.Reason()
	}
	return err.Error()
}

// gitMissing reports whether err says git could not be started, and why.
func gitMissing(err error) (why error, ok bool) {
	var se *gitexec.StartError
	if errors.As(err, &se) {
		return se.Err, true
	}
	return nil, false
}

// loopEnd reports whether the retry loop itself ended the run (a bad setting, or the
// budget spent).
func loopEnd(err error) (resolve *retry.ResolveError, exhausted *retry.ExhaustedError) {
	errors.As(err, &resolve)
	errors.As(err, &exhausted)
	return resolve, exhausted
}
