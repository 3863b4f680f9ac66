package fetch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/refretry/refretry/internal/gitexec"
	"github.com/refretry/refretry/internal/httpconf"
	"github.com/refretry/refretry/internal/repo"
	"github.com/refretry/refretry/retry"
	"github.com/refretry/refretry/transaction"
)

// Runner runs `git fetch` invocations, retrying what another identical fetch can fix.
// Its fields are its configuration, which Run only reads.
type Runner struct {
	Git  string   // git executable: a path, or a name looked up in PATH ("" means "git")
	Dirs []string // -C directories, in order
	Env  []string // the caller's whole environment
	// GlobalArgs are more of git's global options (`-c k=v`, `--git-dir=…`), given to
	// every git fetch after the -C directories. refretry's own look at the repository
	// (for reftable's lock) reads only Dirs and Env, so a caller that passes
	// --git-dir here sets GIT_DIR in Env to the same value, as git itself does.
	GlobalArgs []string

	// Stdin is given to every attempt, except with --stdin, when it is read once
	// (the refspecs) and given to each attempt again. nil means no input.
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer

	// StallFloor is given to git unless the caller configured one; the zero value
	// means internal/httpconf's default.
	StallFloor httpconf.Floor

	// Settings supplies the retry schedule and budget and the stale-lock settings.
	// It is called at most once: after the first failure that may be retried, or
	// before the first attempt when git waits on a server's Retry-After itself (an HTTP
	// remote, git 2.54+), since the budget bounds that wait. nil
	// means retry.DefaultPolicy and transaction.DefaultStaleAfter.
	Settings func() (transaction.Settings, error)
	// BreakStaleLocks removes a local lock found stale and fetches again, as
	// Settings.BreakStaleLocks does. OnBreakLock, if set, is told of each removal; if
	// nil, a "refretry: removed stale lock …" line goes to Stderr.
	BreakStaleLocks bool
	OnBreakLock     func(transaction.BrokenLock)
	// OnAttempt, if set, is called after every attempt; Attempt.Err is a *Error.
	OnAttempt func(retry.Attempt)
	// Clock and Rand are passed to the retry loop; nil means real time and randomness.
	Clock retry.Clock
	Rand  func() float64
}

// Run fetches with the caller's arguments (verbatim) until the fetch succeeds, fails
// for a reason that another attempt cannot fix, or the budget is spent. The final
// attempt's output reaches the Runner's writers as git wrote it. It returns the exit
// code to exit with and an error describing the failure: a *Error, a
// *retry.ExhaustedError or *retry.ResolveError wrapping one, or a *StartError
// (matching ErrGitNotFound).
func (p *Runner) Run(ctx context.Context, args []string) (int, error) {
	stdin, err := p.input(args)
	if err != nil {
		return 128, err
	}
	http := httpconf.Look(ctx, p.git(), p.Dirs, p.Env, remoteOf(args), p.StallFloor)
	env := gitexec.WithLockWait(http.Env(p.Env), gitexec.FirstLockWait)
	settings := sync.OnceValues(func() (transaction.Settings, error) {
		if p.Settings == nil {
			return transaction.Settings{Policy: retry.DefaultPolicy(), StaleAfter: transaction.DefaultStaleAfter}, nil
		}
		return p.Settings()
	})
	clock := p.Clock
	if clock == nil {
		clock = retry.SystemClock{}
	}
	start := clock.Now()
	// left is what the budget leaves for git's own waits on a 429's Retry-After,
	// which need the settings before the first attempt; 0 when git makes none.
	left := func() time.Duration {
		if !http.RateLimited() {
			return 0
		}
		s, err := settings()
		if err != nil || s.Policy.Timeout <= 0 {
			return 0
		}
		return max(s.Policy.Timeout-clock.Now().Sub(start), time.Second)
	}
	var last gitexec.Captured
	retrier := &retry.Retrier{
		Classifier: retry.ClassifierFunc(func(err error) retry.Class {
			var e *Error
			if errors.As(err, &e) && e.Class.Retryable() {
				return retry.Transient
			}
			return retry.Permanent
		}),
		Clock: p.Clock, Rand: p.Rand, OnAttempt: p.OnAttempt,
		Resolve: func() (retry.Policy, error) {
			s, err := settings()
			return s.Policy, err
		},
	}
	_, err = retrier.Do(ctx, func(ctx context.Context, n int) error {
		var runErr error
		last, runErr = p.attempt(ctx, http.Attempt(env, left()), args, stdin)
		if runErr != nil {
			return runErr
		}
		e := Classify(last.Code, last.Stderr)
		if e == nil {
			return nil
		}
		p.checkStale(e, settings)
		return e
	})
	if errors.Is(err, ErrGitNotFound) {
		return 128, err
	}
	if _, werr := p.stdout().Write(last.Stdout); werr != nil && err == nil {
		err = werr
	}
	if _, werr := p.stderr().Write(last.Stderr); werr != nil && err == nil {
		err = werr
	}
	if err == nil {
		return 0, nil
	}
	var e *Error
	if errors.As(err, &e) {
		return e.ExitCode, err
	}
	return 128, err
}

// input is what each attempt reads on its standard input: with --stdin, the caller's
// refspecs, read once.
func (p *Runner) input(args []string) (func() io.Reader, error) {
	if p.Stdin == nil || !readsStdin(args) {
		return func() io.Reader { return p.Stdin }, nil
	}
	b, err := io.ReadAll(p.Stdin)
	if err != nil {
		return nil, fmt.Errorf("reading the refspecs on standard input: %w", err)
	}
	return func() io.Reader { return bytes.NewReader(b) }, nil
}

// checkStale turns lock contention into a stale lock when the lock counts as stale
// (lockfile.Rule: a holder pid not running here proves nothing before the pid grace),
// and, when asked to, removes such a lock so that the fetch runs again.
func (p *Runner) checkStale(e *Error, settings func() (transaction.Settings, error)) {
	var l *LockedError
	if e.Class != ClassLockContention || !errors.As(e, &l) {
		return
	}
	s, err := settings()
	if err != nil {
		return // reported by the retry loop
	}
	if l.Lock == "" {
		if d, ok := repo.Discover(p.Dirs, p.Env); ok && d.Reftable() {
			l.Lock = d.ReftableLock()
		}
	}
	l.Inspect(s, time.Now())
	if !l.Stale {
		return
	}
	e.Class = ClassStaleLock
	if !p.BreakStaleLocks && !s.BreakStaleLocks {
		return
	}
	removed := p.OnBreakLock
	if removed == nil {
		removed = func(b transaction.BrokenLock) { fmt.Fprintf(p.stderr(), "refretry: %s\n", b) }
	}
	if l.BreakStale(s, removed) {
		e.Class = ClassLockContention
	}
}

// attempt runs git fetch once with its output captured.
func (p *Runner) attempt(ctx context.Context, env, args []string, stdin func() io.Reader) (gitexec.Captured, error) {
	full := append(append(append(make([]string, 0, len(p.GlobalArgs)+1+len(args)), p.GlobalArgs...), "fetch"), args...)
	cmd := gitexec.Command(ctx, p.git(), p.Dirs, env, full...)
	cmd.Stdin = stdin()
	return gitexec.Capture(cmd)
}

func (p *Runner) git() string {
	if p.Git == "" {
		return "git"
	}
	return p.Git
}

func (p *Runner) stdout() io.Writer { return writerOrDiscard(p.Stdout) }
func (p *Runner) stderr() io.Writer { return writerOrDiscard(p.Stderr) }

func writerOrDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

// fetchValueOptions are git fetch's options whose value may be the next argument.
var fetchValueOptions = []string{
	"--upload-pack", "--depth", "--shallow-since", "--shallow-exclude", "--deepen",
	"--refmap", "-o", "--server-option", "--negotiation-tip", "--negotiation-restrict",
	"--negotiation-include", "--filter", "-j", "--jobs", "--recurse-submodules-default",
	"--submodule-prefix",
}

// remoteOf is the repository a fetch names, as far as the stall floor needs to know:
// its first operand; "" when it names none (git's default remote) or fetches from
// several (--all, --multiple), whose URLs git config decides.
func remoteOf(args []string) string {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--all" || a == "--multiple" || a == "-m":
			return ""
		case a == "--" || a == "--end-of-options":
			if i+1 < len(args) {
				return args[i+1]
			}
			return ""
		case slices.Contains(fetchValueOptions, a):
			i++
		case strings.HasPrefix(a, "-"):
		default:
			return a
		}
	}
	return ""
}

// readsStdin reports whether git fetch reads refspecs from standard input.
func readsStdin(args []string) bool {
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--":
			return false
		case a == "--stdin":
			return true
		case slices.Contains(fetchValueOptions, a):
			i++
		}
	}
	return false
}
