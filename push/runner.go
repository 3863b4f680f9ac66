package push

import (
	"context"
	"errors"
	"io"
	"os/exec"

	"github.com/refretry/refretry/failure"
	"github.com/refretry/refretry/internal/engine"
	"github.com/refretry/refretry/internal/gitexec"
	"github.com/refretry/refretry/internal/httpconf"
	"github.com/refretry/refretry/internal/replay"
	"github.com/refretry/refretry/settings"
)

// Runner runs `git push` invocations, retrying what can succeed on another attempt.
// Its fields are its configuration, which Run only reads: one Runner may run any
// number of pushes, one after another or at once.
//
// Its Config's Settings supplies the retry schedule and budget (the stale-lock
// settings do not apply: a remote lock is the server's). It is asked at most once a
// run: after the first failure that may be retried, or before the first attempt when
// git waits on a server's Retry-After itself (an HTTP remote, git 2.54+), since the
// budget bounds that wait. Note is told what the Runner did besides pushing (a
// rebase, a regeneration, a success proved by comparing the remote with what was
// pushed).
type Runner struct {
	settings.Config
	// GlobalArgs are more of git's global options (`-c k=v`, `--git-dir=…`), given to
	// every git the push runs, after the -C directories (the shim's `git -c k=v push`).
	// A caller that passes --git-dir here sets GIT_DIR in Env to the same value, as git
	// itself does.
	GlobalArgs []string

	// NoAtomic leaves out --atomic, so that refs the server accepts are updated even
	// when others fail. The caller's own --atomic or --no-atomic always wins.
	NoAtomic bool
	// Rebase, when the push is rejected because the remote moved the ref (non-fast-
	// forward, fetch first, or the server's compare-and-swap failed), replays the
	// pushed commits onto the remote's new tip and pushes again: from a branch, a
	// detached HEAD or a commit given by name (rebase.go says what moves). Without it,
	// the settings' PushRebase does the same for a push that can be rebased safely
	// (optin.go). A replayed commit is signed as `git commit` would sign it in the
	// repository (commit.gpgSign), and always when the commit it replays was signed;
	// one that cannot be is never pushed unsigned. The same holds for Regenerate's
	// commit.
	Rebase bool
	// Regenerate, when not empty, is a shell command that makes the job's commit
	// again: on such a rejection (or when Rebase's replay conflicts) the checked-out
	// commit and the work tree are reset to the remote's tip, the command runs at the
	// top of the work tree, and what it changed is committed with the job's author and
	// message and pushed (regenerate.go). The job's own commit is kept at OriginalRef.
	Regenerate string
	// Optional are refs (destinations, in full) that the push may fail to update: a
	// rejection of one of them neither decides how the push is judged nor is retried,
	// and a push whose only rejections are theirs succeeds (exit 0); Result.Report
	// shows what became of each. With NoAtomic, for a ref a push offers to create
	// only if nobody else has (gather's lease, taken in the staging push).
	Optional []string
	// Progress asks git for its progress meter (--progress) unless the caller's
	// arguments decide it (-q, --quiet, --progress, --no-progress): git push shows it
	// by default when its stderr is a terminal, and git run here has a pipe, so a
	// caller whose stderr is a terminal sets it (refretry push and the shim do).
	// Progress, asked for here or by the caller, reaches stderr as git writes it, in
	// every attempt (progress.go).
	Progress bool

	// stallFloor is given to git unless the caller configured one; the zero value
	// means httpconf.Default. Only the tests change it (export_test.go): a caller
	// sets its own floor as git takes it, in Env or git config.
	stallFloor httpconf.Floor
}

// Result is what a Run did.
type Result struct {
	// ExitCode is the exit code to exit with: git's final one, 0 for a success proved
	// by verification, 1 when a rebase or regeneration failed ([failure.ExitCode]).
	ExitCode int
	// Report is the final attempt's porcelain (for a success proved by verification,
	// the verified refs, up to date).
	Report   Report
	Attempts int
}

// Run pushes with the caller's arguments (verbatim) until the push succeeds, fails
// for a reason that another attempt cannot fix, or the budget is spent. stdin is not
// read (git push takes no input; nil will do): it is there so that the Runners of
// transaction, push and fetch run alike. git's progress
// reaches stderr as git writes it, in every attempt (Progress says when git shows
// it); the rest of git's output from the final attempt reaches stdout and stderr
// once that attempt ends: the porcelain on stdout when the caller asked for it, else
// rendered as git's human table on stderr. The error is a
// *failure.Error (a rebase or regeneration failure is one too, its Cause a
// *RebaseError or *RegenerateError; so is a commit it had to sign and could not, of
// class failure.Signing), a *retry.ExhaustedError or *retry.ResolveError wrapping
// one, or an error matching [failure.ErrGitNotFound].
func (p *Runner) Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) (Result, error) {
	r := &pushRun{Runner: p, args: ParseArgs(args), stdout: stdout, stderr: stderr, rebase: p.Rebase}
	if r.args.Usage {
		res, err := p.usage(ctx, r.args, stdout, stderr)
		res.ExitCode = failure.ExitCode(res.ExitCode, err)
		return res, err
	}
	r.http = httpconf.Look(ctx, p.GitPath(), p.Dirs, p.Env, r.args.Remote, p.stallFloor)
	r.env = r.http.Env(p.Env)
	code, err := engine.For(&p.Config, &r.attempts).Run(ctx, r)
	return Result{ExitCode: failure.ExitCode(code, err), Report: r.report, Attempts: r.attempts}, err
}

// usage runs git push once with the caller's arguments as they are (no --porcelain,
// no --atomic: git's answer to -h depends on what else it is given) and the
// caller's streams, for arguments that ask git for its usage: git pushes nothing,
// and its stream and exit code are the running git's, whatever its version.
func (p *Runner) usage(ctx context.Context, args Args, stdout, stderr io.Writer) (Result, error) {
	cmd := p.command(ctx, p.Env, append([]string{"push"}, args.Raw...)...)
	cmd.Stdout, cmd.Stderr = stdout, stderr // nil: the null device
	runErr := cmd.Run()
	code, ran := gitexec.ExitCode(cmd.ProcessState)
	if !ran {
		return Result{ExitCode: 128}, &gitexec.StartError{Err: runErr}
	}
	if v := classify(code, nil, nil, nil); v.err != nil {
		return Result{ExitCode: code}, v.err
	}
	return Result{}, nil
}

func (p *Runner) command(ctx context.Context, env []string, args ...string) *exec.Cmd {
	if len(p.GlobalArgs) > 0 {
		args = append(append(make([]string, 0, len(p.GlobalArgs)+len(args)), p.GlobalArgs...), args...)
	}
	return gitexec.Command(ctx, p.GitPath(), p.Dirs, env, args...)
}

// pushRun is one Run: the engine's command.
type pushRun struct {
	*Runner
	args           Args
	stdout, stderr io.Writer
	http           httpconf.Settings
	env            []string
	attempts       int

	last     gitexec.Captured
	verdict  verdict         // the last attempt's
	report   Report          // what the run reports
	unsure   bool            // an attempt's outcome is unsure: it may have been applied
	named    []RefStatus     // the refs the latest attempt named, for verification
	url      string          // the remote's URL, from the porcelain
	verified bool            // the remote was found to hold every pushed value
	nothing  bool            // --regenerate found the job's result on the remote already
	rebase   bool            // a push behind the remote is rebased: Rebase, or the settings' opt-in
	optIn    bool            // the settings' PushRebase was looked at (optin.go)
	sign     *replay.Signing // whether replays are signed, once read (replayer)
	onto     string          // the remote's tip the last cure fetched
	// pending is the cure (a rebase, a regeneration) the next attempt applies before
	// it pushes: after the engine's pause, so that the remote's tip it fetches is as
	// fresh as it can be when the push follows.
	pending *cure
}

// Attempt applies the pending cure, if any, then runs git push once with its output
// captured, its progress passed on as it comes, and classifies it.
func (r *pushRun) Attempt(ctx context.Context, a *engine.Attempt) error {
	if c := r.pending; c != nil {
		switch next, err := r.applyCure(ctx, a, &r.args, r.url, *c); {
		case err != nil:
			return err // the cure's own failure; a transport failure keeps it pending
		case next == engine.Done:
			r.pending = nil
			return nil
		}
		r.pending = nil
	}
	full := []string{"push", "--porcelain"}
	if r.args.Atomic == nil && !r.NoAtomic {
		full = append(full, "--atomic")
	}
	env := r.env
	if r.http.RateLimited() {
		env = r.http.Attempt(env, a.Left())
	}
	if r.Progress && r.args.Progress == nil && !r.args.Quiet {
		full = append(full, "--progress")
	}
	cmd := r.command(ctx, env, append(full, r.args.Raw...)...)
	if r.stderr != nil {
		cmd.Stderr = &progressWriter{w: r.stderr}
	}
	var err error
	if r.last, err = gitexec.Capture(cmd); err != nil {
		return err
	}
	r.verdict = classify(r.last.Code, r.last.Stdout, r.last.Stderr, r.Optional)
	if e := r.verdict.err; e != nil {
		if r.verdict.report.URL != "" {
			r.url = r.verdict.report.URL
		}
		if len(r.verdict.report.Refs) > 0 {
			r.named = r.verdict.report.Refs
		}
		return e
	}
	return nil
}

// Cure acts on a failed attempt before the next one: an attempt whose outcome is
// unsure is checked against the remote (it may have been applied, its answer lost),
// as is a compare-and-swap failure on the server (the HTTP library may have sent this
// very push twice); a push behind the remote is rebased or regenerated when asked, by
// the next attempt (pending), after the engine's pause.
func (r *pushRun) Cure(ctx context.Context, a *engine.Attempt, f *failure.Error) (engine.Next, error) {
	if f.Class == failure.Behind {
		r.optInRebase(a)
	}
	switch {
	case r.pending != nil:
		// The pending cure's fetch failed: its class decides, and the next attempt
		// applies the cure again.
		return engine.Stop, nil
	case f.Class == failure.Transport || f.Class == failure.Race || f.Class == failure.Unknown:
		r.unsure = true
		if len(r.verdict.report.Refs) == 0 && len(r.named) == 0 {
			r.named = r.planFromArgs(ctx, r.args)
		}
		if len(r.named) > 0 {
			held, absent := r.check(ctx, r.env, r.args, r.url, r.named)
			if held {
				return r.proved(a), nil
			}
			// Said only if the run ends on this failure; it does not replace what the
			// engine already found to say (a remote that never answered).
			if adv := creationAdvice(r.verdict.report.Refs, absent); adv != "" {
				f.Advice = adv
			}
		}
		return engine.Stop, nil
	case (r.unsure || f.Moved != nil) && !f.Class.Retryable() && len(r.verdict.report.Refs) > 0 &&
		!r.cureFetches(f) && r.verify(ctx, r.env, r.args, r.url, r.verdict.report.Refs):
		// An earlier attempt was applied and its answer lost, or the transport sent
		// this one twice and the first copy was applied.
		r.named = r.verdict.report.Refs
		return r.proved(a), nil
	case f.Class == failure.Behind && (r.rebase || r.Regenerate != ""):
		if r.pending = r.cureTarget(a, r.verdict); r.pending == nil {
			return engine.Stop, nil
		}
		return engine.Retry, nil
	}
	return engine.Stop, nil
}

// cureFetches reports whether the cure of f fetches the one ref the push named: the
// fetched tip then shows, as ls-remote would, whether the remote already holds the
// pushed value (applyCure), and the push needs no check of its own.
func (r *pushRun) cureFetches(f *failure.Error) bool {
	refs := r.verdict.report.Refs
	return f.Class == failure.Behind && (r.rebase || r.Regenerate != "") && len(refs) == 1 && refs[0].From != ""
}

// proved ends the run as a success the remote proves.
func (r *pushRun) proved(a *engine.Attempt) engine.Next {
	r.verified = true
	a.Note("verified", "the remote already holds every pushed value (an earlier attempt was applied, its answer lost)")
	return engine.Done
}

// Final writes the final attempt's output, or what a proved or empty success reports.
func (r *pushRun) Final(err error) (int, error) {
	if errors.Is(err, failure.ErrGitNotFound) {
		return 128, err
	}
	r.report = r.verdict.report
	switch {
	case r.nothing:
		r.report = Report{}
		return 0, nil
	case r.verified:
		r.report = r.writeVerified(r.args, r.url, r.named)
		return 0, nil
	}
	if werr := r.writeOutput(r.args, r.last); werr != nil && err == nil {
		err = werr
	}
	if err == nil {
		return 0, nil
	}
	var e *failure.Error
	if errors.As(err, &e) {
		return e.ExitCode, err
	}
	return 1, err
}
