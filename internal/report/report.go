// Package report is the operation layer every refretry command reports through: one
// line per retry and one about how the run ended in refretry's plain form, or attempt
// and summary records in a ci format (ci/), with git's stderr relayed so that nothing
// it prints can start a CI command.
//
// A command gives it the retry loop's attempts, its notes, and its run's outcome.
// Failures are read from their fields (*failure.Error); the retry loop's own errors
// (a budget spent, a bad setting) and git that could not be started are read here.
package report

import (
	"errors"
	"fmt"

	"github.com/refretry/refretry/failure"
	"github.com/refretry/refretry/internal/gitexec"
	"github.com/refretry/refretry/retry"
)

// Exit codes of refretry's own failures; git's codes pass through unchanged.
const (
	ExitFatal      = 128                     // as git's die()
	ExitGitMissing = failure.ExitGitNotFound // as a shell's "command not found"
)

// reason is a one-line reason for any error an attempt or run ended with: a failure
// in a few words ("lock-contention on <lock>", or its class and git's line), or the
// error's own text.
func reason(err error) string {
	f := asFailure(err)
	if f == nil {
		return err.Error()
	}
	if l := f.Lock; l != nil {
		switch {
		case l.Remote && f.Class == failure.LockContention && l.Path != "":
			return fmt.Sprintf("%s on the remote's %s: %s", f.Class, l.Path, f.Line())
		case l.Remote && f.Class == failure.LockContention:
			return fmt.Sprintf("%s on the remote's references: %s", f.Class, f.Line())
		case !l.Remote && l.Path != "":
			return fmt.Sprintf("%s on %s", f.Class, l.Path)
		}
	}
	return fmt.Sprintf("%s: %s", f.Class, f.Line())
}

// asFailure is the *failure.Error err is or wraps, nil when there is none.
func asFailure(err error) *failure.Error {
	var f *failure.Error
	if errors.As(err, &f) {
		return f
	}
	return nil
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
