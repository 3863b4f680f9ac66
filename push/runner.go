package push

import (
	"context"
	"errors"
	"io"
	"os/exec"
	"sync"
	"time"

	"github.com/refretry/refretry/internal/gitexec"
	"github.com/refretry/refretry/internal/httpconf"
	"github.com/refretry/refretry/retry"
)

// Runner runs one `git push` invocation, retrying what can succeed on another attempt.
type Runner struct {
	Git  string   // git executable: a path, or a name looked up in PATH ("" means "git")
	Dirs []string // -C directories, in order
	Env  []string // the caller's whole environment

	Stdout io.Writer
	Stderr io.Writer

	// NoAtomic leaves out --atomic, so that refs the server accepts are updated even
	// when others fail. The caller's own --atomic or --no-atomic always wins.
	NoAtomic bool
	// Rebase, when the push is rejected because the remote moved the ref (non-fast-
	// forward, fetch first, or the server's compare-and-swap failed), replays the
	// pushed commits onto the remote's new tip and pushes again: from a branch, a
	// detached HEAD or a commit given by name (rebase.go says what moves).
	Rebase bool
	// Regenerate, when not empty, is a shell command that makes the job's commit
	// again: on such a rejection (or when Rebase's replay conflicts) the checked-out
	// commit and the work tree are reset to the remote's tip, the command runs at the
	// top of the work tree, and what it changed is committed with the job's author and
	// message and pushed (regenerate.go). The job's own commit is kept at OriginalRef.
	Regenerate string
	// StallFloor is given to git unless the caller configured one; the zero value
	// means DefaultStallFloor.
	StallFloor StallFloor

	// Policy supplies the retry schedule and budget. It is called at most once: after
	// the first failure that may be retried, or before the first attempt when git waits
	// on a server's Retry-After itself (an HTTP remote, git 2.54+), since the budget
	// bounds that wait. nil means retry.DefaultPolicy.
	Policy func() (retry.Policy, error)
	// OnAttempt, if set, is called after every attempt. Attempt.Err is a *Error or a
	// *RebaseError.
	OnAttempt func(retry.Attempt)
	// Notify, if set, receives one-line notes on what the Runner did besides pushing:
	// a rebase, or a success proved by comparing the remote with what was pushed.
	Notify func(msg string)
	// Clock and Rand are passed to the retry loop; nil means real time and randomness.
	Clock retry.Clock
	Rand  func() float64

	// Report is set by Run: the final attempt's porcelain (for a success proved by
	// verification, the verified refs, up to date).
	Report Report
}

// Run pushes with the caller's arguments (verbatim) until the push succeeds, fails
// for a reason that another attempt cannot fix, or the budget is spent. git's output
// from the final attempt reaches the Runner's writers: the porcelain on Stdout when the
// caller asked for it, else rendered as git's human table on Stderr. It returns the
// exit code to exit with and an error describing the failure: a *Error, a
// *RebaseError, a *retry.ExhaustedError or *retry.ResolveError wrapping a *Error, or
// a *StartError (matching ErrGitNotFound).
func (p *Runner) Run(ctx context.Context, rawArgs []string) (int, error) {
	args := ParseArgs(rawArgs)
	http := httpconf.Look(ctx, p.git(), p.Dirs, p.Env, args.Remote, p.StallFloor)
	env := http.Env(p.Env)
	policy := sync.OnceValues(func() (retry.Policy, error) {
		if p.Policy == nil {
			return retry.DefaultPolicy(), nil
		}
		return p.Policy()
	})
	clock := p.Clock
	if clock == nil {
		clock = retry.SystemClock{}
	}
	start := clock.Now()
	// left is what the budget leaves for git's own waits on a 429's Retry-After,
	// which need the policy before the first attempt; 0 when git makes none.
	left := func() time.Duration {
		if !http.RateLimited() {
			return 0
		}
		pol, err := policy()
		if err != nil || pol.Timeout <= 0 {
			return 0
		}
		return max(pol.Timeout-clock.Now().Sub(start), time.Second)
	}
	var (
		last     gitexec.Captured
		unknown  bool        // an attempt's outcome is unsure (Class.unsure): it may have been applied
		named    []RefStatus // the refs the latest attempt named, for verification
		url      string      // the remote's URL, from the porcelain
		cureNext *cure       // what to do before the next attempt (rebase, regenerate)
		verified bool
		nothing  bool // --regenerate found the job's result on the remote already
	)
	cures := p.Rebase || p.Regenerate != ""
	retrier := &retry.Retrier{
		Classifier: retry.ClassifierFunc(func(err error) retry.Class {
			var e *Error
			if errors.As(err, &e) && (e.Class.Retryable() || (e.Class == ClassBehind && cureNext != nil)) {
				return retry.Transient
			}
			return retry.Permanent
		}),
		Clock: p.Clock, Rand: p.Rand, OnAttempt: p.OnAttempt,
		Resolve: policy,
	}
	_, err := retrier.Do(ctx, func(ctx context.Context, n int) error {
		if unknown && len(named) > 0 && p.verify(ctx, env, args, url, named) {
			verified = true
			return nil
		}
		if cureNext != nil {
			done, err := p.applyCure(ctx, env, &args, url, *cureNext)
			if err != nil {
				return err
			}
			cureNext = nil
			if done {
				nothing = true
				return nil
			}
		}
		var runErr error
		last, runErr = p.attempt(ctx, http.Attempt(env, left()), args)
		if runErr != nil {
			return runErr
		}
		e := Classify(last.Code, last.Stdout, last.Stderr)
		if e == nil {
			return nil
		}
		if e.URL != "" {
			url = e.URL
		}
		if len(e.Refs) > 0 {
			named = e.Refs
		}
		switch {
		case e.Class.unsure():
			unknown = true
			if len(named) == 0 {
				named = p.planFromArgs(ctx, args)
			}
		case (unknown || movedOnServer(e)) && !e.Class.Retryable() && len(e.Refs) > 0 && p.verify(ctx, env, args, url, e.Refs):
			// An earlier attempt was applied and its answer lost, or the transport
			// sent this one twice and the first copy was applied.
			verified = true
			return nil
		case e.Class == ClassBehind && cures:
			cureNext = p.cureTarget(e)
		}
		return e
	})
	var ex *retry.ExhaustedError
	if errors.As(err, &ex) && unknown && len(named) > 0 && p.verify(ctx, env, args, url, named) {
		verified, err = true, nil
	}
	if errors.Is(err, ErrGitNotFound) {
		return 128, err
	}
	p.Report = ParsePorcelain(last.Stdout)
	if nothing {
		p.Report = Report{}
		return 0, nil
	}
	if verified {
		p.notify("the remote already holds every pushed value (an earlier attempt was applied, its answer lost)")
		p.Report = p.writeVerified(args, url, named)
		return 0, nil
	}
	if werr := p.writeOutput(args, last); werr != nil && err == nil {
		err = werr
	}
	if err == nil {
		return 0, nil
	}
	var e *Error
	if errors.As(err, &e) {
		return e.ExitCode, err
	}
	return 1, err // a rebase or regeneration failure: the push stays rejected, as git's exit code 1
}

func (p *Runner) git() string {
	if p.Git == "" {
		return "git"
	}
	return p.Git
}

func (p *Runner) command(ctx context.Context, env []string, args ...string) *exec.Cmd {
	return gitexec.Command(ctx, p.git(), p.Dirs, env, args...)
}

// attempt runs git push once with its output captured.
func (p *Runner) attempt(ctx context.Context, env []string, args Args) (gitexec.Captured, error) {
	full := []string{"push", "--porcelain"}
	if args.Atomic == nil && !p.NoAtomic {
		full = append(full, "--atomic")
	}
	return gitexec.Capture(p.command(ctx, env, append(full, args.Raw...)...))
}

func (p *Runner) notify(msg string) {
	if p.Notify != nil {
		p.Notify(msg)
	}
}

// movedOnServer reports whether the server's compare-and-swap failed: another push
// moved a ref after the advertisement, and that push may have been this one's own
// request, sent again by the HTTP library after a connection closed unanswered.
func movedOnServer(e *Error) bool {
	var m *MovedError
	return errors.As(e, &m)
}
