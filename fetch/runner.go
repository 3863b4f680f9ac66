package fetch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/refretry/refretry/failure"
	"github.com/refretry/refretry/internal/engine"
	"github.com/refretry/refretry/internal/gitexec"
	"github.com/refretry/refretry/internal/gitopts"
	"github.com/refretry/refretry/internal/httpconf"
	"github.com/refretry/refretry/internal/repo"
	"github.com/refretry/refretry/settings"
)

// Runner runs `git fetch` invocations, retrying what another identical fetch can fix.
// Its fields are its configuration, which Run only reads: one Runner may run any
// number of fetches, one after another or at once.
//
// Its Config's Settings (the retry schedule and budget and the stale-lock settings)
// is asked at most once a run: after the first failure that may be retried, or before
// the first attempt when git waits on a server's Retry-After itself (an HTTP remote,
// git 2.54+), since the budget bounds that wait. Their BreakStaleLocks removes a local
// lock found stale and fetches again. Note is told of a stale lock removed.
type Runner struct {
	settings.Config
	// GlobalArgs are more of git's global options (`-c k=v`, `--git-dir=…`), given to
	// every git fetch after the -C directories. refretry's own look at the repository
	// (for reftable's lock) reads only Dirs and Env, so a caller that passes
	// --git-dir here sets GIT_DIR in Env to the same value, as git itself does.
	GlobalArgs []string
}

// Result is what a Run did.
type Result struct {
	ExitCode int // the exit code to exit with: git's final one ([failure.ExitCode])
	Attempts int
}

// Run fetches with the caller's arguments (verbatim) until the fetch succeeds, fails
// for a reason that another attempt cannot fix, or the budget is spent. stdin is given
// to every attempt (with --stdin it is read once and given again); the final attempt's
// output reaches stdout and stderr as git wrote it. The error is a *failure.Error, a
// *retry.ExhaustedError or *retry.ResolveError wrapping one, or an error matching
// [failure.ErrGitNotFound].
func (p *Runner) Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) (Result, error) {
	input, err := readInput(stdin, args)
	if err != nil {
		return Result{ExitCode: 128}, err
	}
	f := &fetchRun{Runner: p, args: args, input: input, stdout: stdout, stderr: stderr}
	f.http = httpconf.Look(ctx, p.GitPath(), p.Dirs, p.Env, remoteOf(args), httpconf.Floor{})
	f.env = gitexec.WithLockWait(f.http.Env(p.Env), gitexec.FirstLockWait)
	code, err := engine.For(&p.Config, &f.attempts).Run(ctx, f)
	return Result{ExitCode: failure.ExitCode(code, err), Attempts: f.attempts}, err
}

// fetchRun is one Run: the engine's command.
type fetchRun struct {
	*Runner
	args           []string
	input          func() io.Reader
	stdout, stderr io.Writer
	http           httpconf.Settings
	env            []string
	last           gitexec.Captured
	attempts       int
}

// Attempt runs git fetch once, its output captured.
func (f *fetchRun) Attempt(ctx context.Context, a *engine.Attempt) error {
	full := append(append(append(make([]string, 0, len(f.GlobalArgs)+1+len(f.args)), f.GlobalArgs...), "fetch"), f.args...)
	env := f.env
	if f.http.RateLimited() {
		env = f.http.Attempt(env, a.Left())
	}
	cmd := gitexec.Command(ctx, f.GitPath(), f.Dirs, env, full...)
	cmd.Stdin = f.input()
	var err error
	if f.last, err = gitexec.Capture(cmd); err != nil {
		return err
	}
	e := classify(f.last.Code, f.last.Stderr, func(ref string) bool { return f.refGone(ctx, ref) })
	if e == nil {
		return nil
	}
	if e.Lock != nil && e.Lock.Path == "" {
		// reftable's message names no file: its lock is tables.list.lock, in the
		// ref store git uses.
		if d, ok := repo.Discover(f.Dirs, f.Env); ok {
			s, ok := d.Locate(f.Env, func() (string, error) {
				args := append(append(make([]string, 0, len(f.GlobalArgs)+len(repo.StorageArgs)), f.GlobalArgs...), repo.StorageArgs...)
				return repo.ReadStorage(gitexec.Command(ctx, f.GitPath(), f.Dirs, f.Env, args...))
			})
			if ok && s.Reftable() {
				e.Lock.Path = s.ReftableLock()
			}
		}
	}
	return e
}

// refGone reports whether git says the local repository has no ref by that name. A
// ref still there points at an object git cannot read, which another attempt would
// read no better.
func (f *fetchRun) refGone(ctx context.Context, ref string) bool {
	c, err := gitexec.Capture(gitexec.Command(ctx, f.GitPath(), f.Dirs, f.Env, "show-ref", "--verify", "--quiet", ref))
	return err == nil && c.Code == 1
}

// Final writes the final attempt's output.
func (f *fetchRun) Final(err error) (int, error) {
	if errors.Is(err, failure.ErrGitNotFound) {
		return 128, err
	}
	if _, werr := writerOrDiscard(f.stdout).Write(f.last.Stdout); werr != nil && err == nil {
		err = werr
	}
	if _, werr := writerOrDiscard(f.stderr).Write(f.last.Stderr); werr != nil && err == nil {
		err = werr
	}
	if err == nil {
		return 0, nil
	}
	var e *failure.Error
	if errors.As(err, &e) {
		return e.ExitCode, err
	}
	return 128, err
}

// readInput is what each attempt reads on its standard input: with --stdin, the
// caller's refspecs, read once.
func readInput(stdin io.Reader, args []string) (func() io.Reader, error) {
	if stdin == nil || !readsStdin(args) {
		return func() io.Reader { return stdin }, nil
	}
	b, err := io.ReadAll(stdin)
	if err != nil {
		return nil, fmt.Errorf("reading the refspecs on standard input: %w", err)
	}
	return func() io.Reader { return bytes.NewReader(b) }, nil
}

func writerOrDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

// gitFetch is git fetch's options (git 2.39 to 2.55, the hidden ones included).
var gitFetch = gitopts.Command{ShortValues: "oj",
	Flags: []string{
		"verbose", "quiet", "all", "set-upstream", "append", "atomic", "force", "multiple", "tags", "prefetch",
		"prune", "prune-tags", "recurse-submodules", "dry-run", "porcelain", "write-fetch-head", "keep",
		"update-head-ok", "progress", "unshallow", "refetch", "update-shallow", "ipv4", "ipv6", "negotiate-only",
		"auto-maintenance", "auto-gc", "show-forced-updates", "write-commit-graph", "stdin",
	},
	Values: []string{
		"upload-pack", "jobs", "depth", "shallow-since", "shallow-exclude", "deepen", "refmap", "server-option",
		"negotiation-restrict", "negotiation-tip", "negotiation-include", "filter", "recurse-submodules-default",
		"submodule-prefix",
	},
}

// remoteOf is the repository a fetch names, as far as the stall floor needs to know:
// its first operand; "" when it names none (git's default remote) or fetches from
// several (--all, --multiple), whose URLs git config decides.
func remoteOf(args []string) string {
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, negated, _ := gitFetch.Option(a)
		switch {
		case (name == "all" || name == "multiple") && !negated || strings.Contains(gitFetch.Shorts(a), "m"):
			return ""
		case a == "--" || a == "--end-of-options":
			if i+1 < len(args) {
				return args[i+1]
			}
			return ""
		case gitFetch.TakesNext(a):
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
	stdin := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" || a == "--end-of-options" {
			break
		}
		if name, negated, _ := gitFetch.Option(a); name == "stdin" {
			stdin = !negated
		}
		if gitFetch.TakesNext(a) {
			i++
		}
	}
	return stdin
}
