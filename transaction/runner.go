package transaction

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/refretry/refretry/internal/gitexec"
	"github.com/refretry/refretry/internal/lockfile"
	"github.com/refretry/refretry/internal/repo"
	"github.com/refretry/refretry/retry"
)

// DefaultStaleAfter is how old a lock must be before it is called stale. git holds ref
// locks for milliseconds; docs/defaults.md has the measurements.
const DefaultStaleAfter = 2 * time.Minute

// Settings are the knobs a Runner needs only once something has failed.
type Settings struct {
	Policy retry.Policy
	// StaleAfter is the age past which a lock is stale; 0 means that age alone never
	// makes one stale. refretry uses DefaultStaleAfter.
	StaleAfter time.Duration
	// PIDGrace is the age past which a lock whose holder pid (from its ~pid.lock, or
	// git's "no longer running" advice) is not running here is stale; 0 means
	// StaleAfter. Before it the lock is waited for like any other: a holder in another
	// pid namespace (another container sharing the repository) looks just the same.
	PIDGrace time.Duration
	// BreakStaleLocks: remove a lock found stale, then retry (breaklock.go).
	BreakStaleLocks bool
}

// rule is the stale-lock rule the settings give.
func (s Settings) rule() lockfile.Rule {
	return lockfile.Rule{StaleAfter: s.StaleAfter, PIDGrace: s.PIDGrace}
}

// Runner runs `git update-ref` invocations, retrying lock contention. Its fields are
// its configuration, which Run only reads: one Runner may run any number of updates,
// one after another or at once (each with its own Stdin, then).
type Runner struct {
	Git  string   // git executable: a path, or a name looked up in PATH
	Dirs []string // -C directories, in order
	Env  []string // the caller's whole environment
	// GlobalArgs are more of git's global options (`-c k=v`, `--git-dir=…`), given to
	// every git the Runner starts, after the -C directories. The in-process lookup of
	// the repository reads only Dirs and Env, so a caller that passes --git-dir here
	// sets GIT_DIR in Env to the same value, as git itself does. Coalescing is off
	// when GlobalArgs is set: a group commit could not honour each caller's options.
	GlobalArgs []string
	// GitDir and CommonDir are the repository's directories if the caller has
	// found them already (as internal/repo does); otherwise the Runner looks for
	// them itself when it needs them.
	GitDir, CommonDir string

	// Stdin is the caller's input. With --stdin it is read by a goroutine as fast as it
	// comes, independently of git; if git fails before the input ends, Run returns and
	// that goroutine stays blocked in Read until the input ends or fails. Close the
	// reader (an *os.File or a pipe) after Run to release it.
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer

	// Settings supplies the retry policy and stale-lock limit. It is called at most
	// once a run, after the first lock-contention failure, so that reading them (from
	// git config, say) costs nothing when the first attempt succeeds. nil means
	// retry.DefaultPolicy() and DefaultStaleAfter.
	Settings func() (Settings, error)
	// OnAttempt, if set, is called after every attempt. Attempt.Err is a *Error.
	OnAttempt func(retry.Attempt)
	// BeforeWait, if set, is called (once) before the Runner first waits for
	// something other than a single git attempt: a retry, a place in the line, a
	// --stdin session or a git run with the caller's streams. A command sets up its
	// signal handling there, so that an update that needs one git pays nothing for it.
	BeforeWait func()
	// Clock and Rand are passed to the retry loop; nil means real time and randomness.
	Clock retry.Clock
	Rand  func() float64

	// SpoolMemory and SpoolDir configure where large input is kept between attempts.
	SpoolMemory int
	SpoolDir    string

	// BreakStaleLocks removes a lock that is stale (its holder pid is not running here
	// and it is older than the pid grace, or it is older than the stale-after limit
	// with no running holder on record), and retries
	// (breaklock.go); Settings.BreakStaleLocks asks for the same. OnBreakLock, if set,
	// is told of each removal; if nil, a "refretry: removed stale lock …" line goes to
	// Stderr.
	BreakStaleLocks bool
	OnBreakLock     func(BrokenLock)
}

// run is one call of [Runner.Run]: the Runner's configuration, which it does not
// change, and the state of this call alone. A Runner may be run any number of times,
// one call after another or at once.
type run struct {
	*Runner
	start          time.Time
	waitOnce       sync.Once
	settingsOnce   sync.Once
	settingsLoaded atomic.Bool
	settings       Settings
	settingsErr    error
	discovery      *repo.Dirs // discovered's answer once looked up; zero when not found
	repoKnown      bool       // repoDirs has been looked up
	repoDirs       repo.Dirs  // "" when unknown
	lineDir        string     // where attempts queue (see enterLine); "" when they do not
	lineLock       string     // the lock the line is for, when a failure named it
	lockStale      bool       // the head of the line found the lock stale
}

// ErrGitNotFound is matched (errors.Is) by the error Run returns when git cannot be
// started: a *StartError.
var ErrGitNotFound = gitexec.ErrNotFound

// StartError is why git could not be started: the executable is missing or not
// executable, or the system refused a new process.
type StartError = gitexec.StartError

// Run runs update-ref with args (the caller's arguments, verbatim) until it succeeds,
// fails for a reason other than lock contention, or the retry budget is spent. git's
// stdout and stderr reach the Runner's writers as git wrote them, from the final
// attempt only. It returns the exit code to exit with and an error describing the
// failure: a *Error, a *retry.ExhaustedError wrapping one, a *StartError, or a
// *retry.ResolveError when the settings needed for a retry were bad.
func (rr *Runner) Run(ctx context.Context, args Args) (int, error) {
	r := &run{Runner: rr, start: time.Now()}
	switch {
	case !args.Understood:
		return r.passthrough(ctx, args)
	case args.Stdin && args.Batch:
		return r.batchUpdates(ctx, args)
	case args.Stdin:
		return r.session(ctx, args)
	default:
		return r.single(ctx, args)
	}
}

func (r *run) command(ctx context.Context, args ...string) *exec.Cmd {
	if len(r.GlobalArgs) > 0 { // GlobalArgs
		args = append(append(make([]string, 0, len(r.GlobalArgs)+len(args)), r.GlobalArgs...), args...)
	}
	return gitexec.Command(ctx, r.Git, r.Dirs, r.Env, args...)
}

func (r *run) updateRef(ctx context.Context, args Args) *exec.Cmd {
	return r.command(ctx, append([]string{"update-ref"}, args.Raw...)...)
}

func (r *run) beforeWait() {
	if r.BeforeWait != nil {
		r.waitOnce.Do(r.BeforeWait)
	}
}

// FirstLockWait is how long git itself waits for a lock in the first attempt. Each
// later attempt doubles it, always bounded by what is left of the retry budget.
const FirstLockWait = gitexec.FirstLockWait

// retryCommand is updateRef with git's own lock waits (reftable.lockTimeout,
// core.filesRefLockTimeout, core.packedRefsTimeout) set to the attempt's window:
// FirstLockWait × 2^(attempt-1), bounded by the remaining budget. Waiting inside git
// polls the lock far more cheaply than a new process per attempt (docs/defaults.md has
// the measurements); between windows refretry backs off with jitter and checks whether
// the lock has gone stale. The settings travel in GIT_CONFIG_COUNT, so the arguments,
// and git's messages, stay the caller's.
func (r *run) retryCommand(ctx context.Context, args Args, attempt int) *exec.Cmd {
	cmd := r.updateRef(ctx, args)
	cmd.Env = gitexec.WithLockWait(cmd.Env, r.window(attempt))
	return cmd
}

// window is how long attempt may wait for a lock inside git: FirstLockWait ×
// 2^(attempt-1), bounded by what is left of the retry budget; nothing when the lock is
// already known to be stale.
func (r *run) window(attempt int) time.Duration {
	if r.lockStale {
		return 0
	}
	wait := FirstLockWait << min(attempt-1, 20)
	if attempt > 1 {
		wait = min(wait, r.remaining())
	}
	return wait
}

// remaining is what is left of the retry budget (a day when it has no limit). It
// loads the settings: call it only once there is contention.
func (r *run) remaining() time.Duration {
	s, err := r.loadSettings()
	if err != nil {
		return FirstLockWait
	}
	if s.Policy.Timeout <= 0 {
		return 24 * time.Hour
	}
	return max(s.Policy.Timeout-time.Since(r.start), 0)
}

// enterLine queues the attempt behind this host's other refretry processes writing to
// the same lock (see waitInLine). Every attempt on a repository known to use reftable
// queues, as its writers all take one lock; on the files backend, where writers to
// different refs do not contend, only retries queue, on the directory of the lock
// that failed them. Patience is what is left of the retry budget: the line moves as
// fast as git commits, and the one at its head is bounded by its own lock window.
//
// The head of the line checks whether the lock it is about to wait for is stale; if it
// is, git is run without a lock wait, so that the stale lock is reported at once.
func (r *run) enterLine(ctx context.Context, attempt int, ready bool) (leave func()) {
	r.lockStale = false
	if attempt == 1 && r.lineDir == "" {
		r.lineDir = r.reftableDir()
	}
	if r.lineDir == "" || !ready {
		return func() {}
	}
	leave, _ = waitInLine(ctx, r.lineDir, r.linePatience, r.beforeWait)
	r.lockStale = r.heldLockStale()
	return leave
}

// lineQuiet is how long a wait in the line may last before the retry budget is
// looked up for it (which may cost a git process, for git config): a line of
// hundreds of writers moves steadily, and a lookup for each would cost more than
// the wait.
const lineQuiet = 10 * time.Second

// linePatience is waitInLine's patience: what is left of the retry budget, looked
// up only once the wait has lasted lineQuiet, unless the settings are known already.
func (r *run) linePatience(waited time.Duration) time.Duration {
	if waited < lineQuiet && !r.settingsKnown() {
		return lineQuiet - waited
	}
	return r.remaining()
}

// heldLockStale reports whether the lock the line is for is present and stale.
func (r *run) heldLockStale() bool {
	lock := r.lineLock
	if lock == "" {
		lock = filepath.Join(r.lineDir, "tables.list.lock")
	}
	if _, err := os.Lstat(lock); err != nil {
		return false // the usual case: nobody holds it
	}
	s, err := r.loadSettings()
	if err != nil {
		return false
	}
	l := &LockedError{Lock: lock}
	l.Inspect(s, time.Now())
	return l.Stale
}

// passthrough runs git once with the caller's streams: for arguments refretry cannot
// read with certainty, git alone decides what they mean.
func (r *run) passthrough(ctx context.Context, args Args) (int, error) {
	r.beforeWait()
	cmd := r.updateRef(ctx, args)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = r.Stdin, r.Stdout, r.Stderr
	return finish(cmd, cmd.Run(), nil)
}

// finish turns a finished command into an exit code, classifying a failure.
func finish(cmd *exec.Cmd, runErr error, stderr []byte) (int, error) {
	code, ran := gitexec.ExitCode(cmd.ProcessState)
	switch {
	case !ran && (errors.Is(runErr, context.Canceled) || errors.Is(runErr, context.DeadlineExceeded)):
		return 128, fmt.Errorf("interrupted before git started: %w", runErr)
	case !ran:
		return 128, &StartError{Err: runErr}
	}
	return classify(code, stderr)
}

// classify is the outcome of a git that ran and exited with code.
func classify(code int, stderr []byte) (int, error) {
	if code == 0 {
		return 0, nil
	}
	return code, Classify(code, stderr)
}

// settingsKnown reports whether the settings have been loaded already.
func (r *run) settingsKnown() bool { return r.settingsLoaded.Load() }

func (r *run) loadSettings() (Settings, error) {
	defer r.settingsLoaded.Store(true)
	r.settingsOnce.Do(func() {
		if r.Settings == nil {
			r.settings = Settings{Policy: retry.DefaultPolicy(), StaleAfter: DefaultStaleAfter}
			return
		}
		r.settings, r.settingsErr = r.Settings()
	})
	return r.settings, r.settingsErr
}

// retrier returns the retry loop; classify is called on every failure.
func (r *run) retrier(ctx context.Context) *retry.Retrier {
	return &retry.Retrier{
		Classifier: retry.ClassifierFunc(func(err error) retry.Class {
			var e *Error
			if errors.As(err, &e) && e.Class == ClassLockContention {
				return retry.Transient
			}
			return retry.Permanent
		}),
		Clock:     r.Clock,
		Rand:      r.Rand,
		OnAttempt: r.OnAttempt,
		Resolve: func() (retry.Policy, error) {
			s, err := r.loadSettings()
			return s.Policy, err
		},
	}
}

// outcome is finish for an attempt that may be retried: a lock-contention failure
// is checked for staleness before the retry loop sees it.
func (r *run) outcome(ctx context.Context, cmd *exec.Cmd, runErr error, stderr []byte) (int, error) {
	if _, ran := gitexec.ExitCode(cmd.ProcessState); !ran {
		return finish(cmd, runErr, stderr)
	}
	code, _ := gitexec.ExitCode(cmd.ProcessState)
	return r.classified(ctx, code, stderr)
}

// classified is classify for an attempt that may be retried: a lock-contention
// failure is checked for staleness before the retry loop sees it, and the caller's
// signal handling is set up before the retry loop waits.
func (r *run) classified(ctx context.Context, code int, stderr []byte) (int, error) {
	code, err := classify(code, stderr)
	var e *Error
	if errors.As(err, &e) {
		r.checkStale(ctx, e)
		if e.Class == ClassLockContention {
			r.beforeWait()
		}
	}
	return code, err
}

// checkStale turns a lock-contention failure into a stale-lock one when the lock counts
// as stale (lockfile.Rule), so that no time is spent waiting for it.
func (r *run) checkStale(ctx context.Context, e *Error) {
	var l *LockedError
	if e == nil || e.Class != ClassLockContention && e.Class != ClassStaleLock || !errors.As(e, &l) {
		return
	}
	s, err := r.loadSettings()
	if err != nil {
		return // reported by the retry loop
	}
	if e.Class == ClassStaleLock { // a leftover Classify knows to be stale
		r.breakStale(e, l, s) // breaklock.go: only when asked to (and only a .lock)
		return
	}
	if l.Lock == "" {
		l.Lock = r.reftableLock(ctx)
	}
	l.Inspect(s, time.Now())
	if l.Stale {
		e.Class = ClassStaleLock
		r.breakStale(e, l, s) // breaklock.go: only when asked to
		return
	}
	if l.Lock != "" {
		r.lineDir, r.lineLock = filepath.Dir(l.Lock), l.Lock
	}
}

// single runs the one-ref and -d forms. They do not read standard input, so each
// attempt gets the caller's (when it is a file; else nothing). Their output is held
// until the attempt is known final. git is started directly and its output read
// through pipes in this goroutine (gitexec.Run): no goroutines, no poller.
func (r *run) single(ctx context.Context, args Args) (int, error) {
	var out, errOut *Spool
	defer func() { closeSpools(out, errOut) }()
	stdin, _ := r.Stdin.(*os.File)
	gitArgs := append(append(append(make([]string, 0, len(r.GlobalArgs)+1+len(args.Raw)), r.GlobalArgs...), "update-ref"), args.Raw...)
	code := 0
	_, err := r.retrier(ctx).Do(ctx, func(ctx context.Context, n int) error {
		closeSpools(out, errOut)
		out, errOut = NewSpool(r.SpoolMemory, r.SpoolDir), NewSpool(r.SpoolMemory, r.SpoolDir)
		leave := r.enterLine(ctx, n, true)
		defer leave()
		var err error
		code, err = gitexec.Run(ctx, gitexec.Spec{
			Git: r.Git, Dirs: r.Dirs, Env: gitexec.WithLockWait(r.Env, r.window(n)), Args: gitArgs, Stdin: stdin,
		}, out, errOut)
		var se *gitexec.StartError
		switch {
		case errors.As(err, &se):
			code = 128
			return startFailure(ctx, se.Err)
		case err != nil:
			code = 128
			return err
		}
		code, err = r.classified(ctx, code, errOut.Tail(classifyTail))
		return err
	})
	if errors.Is(err, ErrGitNotFound) {
		return code, err
	}
	if _, werr := out.WriteTo(r.Stdout); werr != nil && err == nil {
		err = werr
	}
	if _, werr := errOut.WriteTo(r.Stderr); werr != nil && err == nil {
		err = werr
	}
	return code, err
}

func closeSpools(ss ...*Spool) {
	for _, s := range ss {
		if s != nil {
			s.Close()
		}
	}
}

// startFailure is the error for a git that could not be started.
func startFailure(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("interrupted before git started: %w", ctx.Err())
	}
	return &StartError{Err: err}
}

// classifyTail is how much of the end of stderr the classifier reads: git's final
// message, with its advice, is far shorter.
const classifyTail = 64 << 10
