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
	"time"

	"github.com/refretry/refretry/failure"
	"github.com/refretry/refretry/internal/engine"
	"github.com/refretry/refretry/internal/gitexec"
	"github.com/refretry/refretry/internal/lockfile"
	"github.com/refretry/refretry/internal/platform"
	"github.com/refretry/refretry/internal/repo"
	"github.com/refretry/refretry/retry"
	"github.com/refretry/refretry/settings"
)

// Runner runs `git update-ref` invocations, retrying lock contention. Its fields are
// its configuration, which Run only reads: one Runner may run any number of updates,
// one after another or at once.
//
// Its Config's Settings is asked at most once a run, after the first lock-contention
// failure (or when a wait for a group's leader is long); their BreakStaleLocks
// removes a lock found stale, then retries (docs/reliability.md). Note is told of a
// stale lock removed.
type Runner struct {
	settings.Config
	// GlobalArgs are more of git's global options (`-c k=v`, `--git-dir=…`), given to
	// every git the Runner starts, after the -C directories. The in-process lookup of
	// the repository reads only Dirs and Env, so a caller that passes --git-dir here
	// sets GIT_DIR in Env to the same value, as git itself does.
	GlobalArgs []string

	// Group, if set, lets a one-ref update join its repository's group commit (see
	// Group); nil means never: each update runs its own git. refretry sets it unless
	// coalescing is switched off.
	Group *Group
	// CountRefs makes a --stdin run count the updates of its input, for Result's
	// Updates and Refs (a regular file is then read once more, at the end).
	CountRefs bool
	// BeforeWait, if set, is called once a run, before it first waits for something
	// other than a single git attempt: a retry, a place in the line, a --stdin
	// session or a git run with the caller's streams. refretry starts catching
	// signals there, so that an update that needs one git pays nothing for it.
	BeforeWait func()
}

// Result is what a Run did.
type Result struct {
	ExitCode int // the exit code to exit with: git's final one ([failure.ExitCode])
	Attempts int
	// Updates is how many ref updates the command asked for (the one of the one-ref
	// forms); -1 when not counted (a --stdin input without CountRefs). Refs are the
	// first 20 of them.
	Updates int
	Refs    []string
	// Backend is the format of the repository's ref store ("files", "reftable") when
	// the run looked it up (to join a group, or to find a lock); "" otherwise.
	Backend string
}

// maxRefs bounds Result.Refs.
const maxRefs = 20

// run is one call of [Runner.Run]: the Runner's configuration, which it does not
// change, and the state of this call alone.
type run struct {
	*Runner
	stdin          io.Reader
	stdout, stderr io.Writer
	attempts       int
	waitOnce       sync.Once
	settingsKnown  bool // s and sErr have been asked for
	s              settings.Settings
	sErr           error
	discovery      *repo.Dirs // discovered's answer once looked up; zero when not found
	found          repo.Store // the store the group join found; zero when it did not
	repoKnown      bool       // repoDirs has been looked up
	repoDirs       repo.Dirs  // "" when unknown
	storeKnown     bool       // refStore has been looked up
	refStore       repo.Store // where git keeps the refs; zero when unknown
	lineDir        string     // where attempts queue (see enterLine); "" when they do not
	lineLock       string     // the lock the line is for, when a failure named it
	lockStale      bool       // the head of the line found the lock stale
}

// Run runs update-ref with args (the caller's arguments, verbatim; [ParseArgs] says
// how refretry reads them) until it succeeds, fails for a reason other than lock
// contention, or the retry budget is spent. stdin
// is the caller's input: with --stdin it is read by a goroutine as fast as it comes,
// independently of git; if git fails before the input ends, Run returns and that
// goroutine stays blocked in Read until the input ends or fails (close the reader, an
// *os.File or a pipe, after Run to release it). git's stdout and stderr reach stdout
// and stderr as git wrote them, from the final attempt only. The error is a
// *failure.Error, a *retry.ExhaustedError or *retry.ResolveError wrapping one, or an
// error matching [failure.ErrGitNotFound]; an update that joined a group commit
// (Runner.Group) may also end with an [*UnknownError].
func (rr *Runner) Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) (Result, error) {
	return rr.RunArgs(ctx, ParseArgs(args), stdin, stdout, stderr)
}

// RunArgs is Run with the arguments read already, by [ParseArgs].
func (rr *Runner) RunArgs(ctx context.Context, args Args, stdin io.Reader, stdout, stderr io.Writer) (Result, error) {
	r := &run{Runner: rr, stdin: stdin, stdout: writerOr(stdout), stderr: writerOr(stderr)}
	var res Result
	var err error
	switch {
	case !args.Understood:
		res, err = r.passthrough(ctx, args)
	case args.Stdin && args.Batch:
		res, err = r.batchUpdates(ctx, args)
	case args.Stdin:
		res, err = r.session(ctx, args)
	default:
		res, err = r.single(ctx, args)
	}
	res.ExitCode, res.Attempts, res.Backend = failure.ExitCode(res.ExitCode, err), r.attempts, r.backend()
	return res, err
}

func writerOr(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

// engine is the attempt loop for this run.
func (r *run) engine() *engine.Engine {
	return &engine.Engine{Config: settings.Config{Settings: r.settings, OnAttempt: r.attempted, Note: r.Note, Clock: r.Clock, Rand: r.Rand}}
}

// attempted counts an attempt and reports it.
func (r *run) attempted(a retry.Attempt) {
	r.attempts++
	if r.OnAttempt != nil {
		r.OnAttempt(a)
	}
}

// settings are the Runner's settings, asked for at most once a run (the wait for a
// group's leader and the retry loop both ask).
func (r *run) settings() (settings.Settings, error) {
	if !r.settingsKnown {
		r.settingsKnown = true
		r.s, r.sErr = r.Load()
	}
	return r.s, r.sErr
}

func (r *run) command(ctx context.Context, args ...string) *exec.Cmd {
	if len(r.GlobalArgs) > 0 { // GlobalArgs
		args = append(append(make([]string, 0, len(r.GlobalArgs)+len(args)), r.GlobalArgs...), args...)
	}
	return gitexec.Command(ctx, r.GitPath(), r.Dirs, r.Env, args...)
}

func (r *run) updateRef(ctx context.Context, args Args) *exec.Cmd {
	return r.command(ctx, append([]string{"update-ref"}, args.Raw...)...)
}

func (r *run) beforeWait() {
	if r.BeforeWait != nil {
		r.waitOnce.Do(r.BeforeWait)
	}
}

// firstLockWait is how long git itself waits for a lock in the first attempt. Each
// later attempt doubles it, always bounded by what is left of the retry budget.
const firstLockWait = gitexec.FirstLockWait

// retryCommand is updateRef with git's own lock waits (reftable.lockTimeout,
// core.filesRefLockTimeout, core.packedRefsTimeout) set to the attempt's window:
// firstLockWait × 2^(attempt-1), bounded by the remaining budget. Waiting inside git
// polls the lock far more cheaply than a new process per attempt (docs/defaults.md has
// the measurements); between windows refretry backs off with jitter and checks whether
// the lock has gone stale. The settings travel in GIT_CONFIG_COUNT, so the arguments,
// and git's messages, stay the caller's.
func (r *run) retryCommand(ctx context.Context, args Args, a *engine.Attempt) *exec.Cmd {
	cmd := r.updateRef(ctx, args)
	cmd.Env = gitexec.WithLockWait(cmd.Env, r.window(a))
	return cmd
}

// window is how long an attempt may wait for a lock inside git: firstLockWait ×
// 2^(attempt-1), bounded by what is left of the retry budget; nothing when the lock is
// already known to be stale.
func (r *run) window(a *engine.Attempt) time.Duration {
	if r.lockStale {
		return 0
	}
	wait := firstLockWait << min(a.N-1, 20)
	if a.N > 1 {
		wait = min(wait, a.Left())
	}
	return wait
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
func (r *run) enterLine(ctx context.Context, a *engine.Attempt, ready bool) (leave func()) {
	r.lockStale = false
	if a.N == 1 && r.lineDir == "" {
		r.lineDir = r.reftableDir()
	}
	if r.lineDir == "" || !ready {
		return func() {}
	}
	leave, _ = waitInLine(ctx, r.lineDir, func(waited time.Duration) time.Duration { return linePatience(a, waited) }, r.beforeWait, platform.LockHeldByOtherUser)
	r.lockStale = r.heldLockStale(a)
	return leave
}

// lineQuiet is how long a wait in the line may last before the retry budget is
// looked up for it (which may cost a git process, for git config): a line of
// hundreds of writers moves steadily, and a lookup for each would cost more than
// the wait.
const lineQuiet = 10 * time.Second

// linePatience is waitInLine's patience: what is left of the retry budget, looked
// up only once the wait has lasted lineQuiet, unless the settings are known already.
func linePatience(a *engine.Attempt, waited time.Duration) time.Duration {
	if waited < lineQuiet && !a.SettingsKnown() {
		return lineQuiet - waited
	}
	return a.Left()
}

// heldLockStale reports whether the lock the line is for is present and stale.
func (r *run) heldLockStale(a *engine.Attempt) bool {
	lock := r.lineLock
	if lock == "" {
		lock = filepath.Join(r.lineDir, "tables.list.lock")
	}
	if _, err := os.Lstat(lock); err != nil {
		return false // the usual case: nobody holds it
	}
	s, err := a.Settings()
	if err != nil {
		return false
	}
	return lockfile.Look(&failure.Lock{Path: lock}, engine.Rule(s), time.Now())
}

// passthrough runs git once with the caller's streams: for arguments refretry cannot
// read with certainty, git alone decides what they mean.
func (r *run) passthrough(ctx context.Context, args Args) (Result, error) {
	r.beforeWait()
	cmd := r.updateRef(ctx, args)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = r.stdin, r.stdout, r.stderr
	code, err := finish(cmd, cmd.Run(), nil)
	return Result{ExitCode: code, Updates: -1}, err
}

// finish turns a finished command into an exit code, classifying a failure.
func finish(cmd *exec.Cmd, runErr error, stderr []byte) (int, error) {
	code, ran := gitexec.ExitCode(cmd.ProcessState)
	switch {
	case !ran && (errors.Is(runErr, context.Canceled) || errors.Is(runErr, context.DeadlineExceeded)):
		return 128, fmt.Errorf("interrupted before git started: %w", runErr)
	case !ran:
		return 128, &gitexec.StartError{Err: runErr}
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

// outcome is finish for an attempt that may be retried.
func (r *run) outcome(ctx context.Context, cmd *exec.Cmd, runErr error, stderr []byte) (int, error) {
	if _, ran := gitexec.ExitCode(cmd.ProcessState); !ran {
		return finish(cmd, runErr, stderr)
	}
	code, _ := gitexec.ExitCode(cmd.ProcessState)
	return r.classified(ctx, code, stderr)
}

// classified is classify for an attempt that may be retried: a lock failure names its
// lock (reftable's message names none: tables.list.lock), which the engine then judges
// and later attempts queue on, and the caller's signal handling is set up before the
// retry loop waits.
func (r *run) classified(ctx context.Context, code int, stderr []byte) (int, error) {
	code, err := classify(code, stderr)
	var e *failure.Error
	if errors.As(err, &e) && e.Lock != nil {
		if e.Lock.Path == "" {
			e.Lock.Path = r.reftableLock(ctx)
		}
		if e.Lock.Path != "" {
			r.lineDir, r.lineLock = filepath.Dir(e.Lock.Path), e.Lock.Path
		}
		if e.Class == failure.LockContention {
			r.beforeWait()
		}
	}
	return code, err
}

// single runs the one-ref and -d forms. They do not read standard input, so each
// attempt gets the caller's (when it is a file; else nothing). Their output is held
// until the attempt is known final. git is started directly and its output read
// through pipes in this goroutine (gitexec.Run): no goroutines, no poller.
func (r *run) single(ctx context.Context, args Args) (Result, error) {
	settled, res, release, err := r.joinGroup(ctx, args)
	if settled {
		return res, err
	}
	defer release()
	c := &singleCmd{r: r}
	c.stdin, _ = r.stdin.(*os.File)
	c.gitArgs = append(append(append(make([]string, 0, len(r.GlobalArgs)+1+len(args.Raw)), r.GlobalArgs...), "update-ref"), args.Raw...)
	defer func() { closeSpools(c.out, c.errOut) }()
	code, err := r.engine().Run(ctx, c)
	res = Result{ExitCode: code, Updates: -1}
	if ref := args.Ref(); ref != "" {
		res.Updates, res.Refs = 1, []string{ref}
	}
	return res, err
}

// singleCmd is the one-ref forms as the engine runs them.
type singleCmd struct {
	r           *run
	stdin       *os.File
	gitArgs     []string
	out, errOut *spool
	code        int
}

func (c *singleCmd) Attempt(ctx context.Context, a *engine.Attempt) error {
	r := c.r
	closeSpools(c.out, c.errOut)
	c.out, c.errOut = newSpool(0, ""), newSpool(0, "")
	leave := r.enterLine(ctx, a, true)
	defer leave()
	var err error
	c.code, err = gitexec.Run(ctx, gitexec.Spec{
		Git: r.GitPath(), Dirs: r.Dirs, Env: gitexec.WithLockWait(r.Env, r.window(a)), Args: c.gitArgs, Stdin: c.stdin,
	}, c.out, c.errOut)
	var se *gitexec.StartError
	switch {
	case errors.As(err, &se):
		c.code = 128
		return startFailure(ctx, se.Err)
	case err != nil:
		c.code = 128
		return err
	}
	c.code, err = r.classified(ctx, c.code, c.errOut.Tail(classifyTail))
	return err
}

func (c *singleCmd) Final(err error) (int, error) {
	if errors.Is(err, failure.ErrGitNotFound) {
		return c.code, err
	}
	if _, werr := c.out.WriteTo(c.r.stdout); werr != nil && err == nil {
		err = werr
	}
	if _, werr := c.errOut.WriteTo(c.r.stderr); werr != nil && err == nil {
		err = werr
	}
	return c.code, err
}

func closeSpools(ss ...*spool) {
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
	return &gitexec.StartError{Err: err}
}

// classifyTail is how much of the end of stderr the classifier reads: git's final
// message, with its advice, is far shorter.
const classifyTail = 64 << 10
