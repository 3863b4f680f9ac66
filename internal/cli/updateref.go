package cli

import (
	"errors"
	"time"

	"github.com/refretry/refretry/failure"
	"github.com/refretry/refretry/internal/cliopts"
	"github.com/refretry/refretry/internal/gitexec"
	"github.com/refretry/refretry/internal/group"
	"github.com/refretry/refretry/internal/platform"
	"github.com/refretry/refretry/internal/repo"
	"github.com/refretry/refretry/internal/report"
	"github.com/refretry/refretry/retry"
	"github.com/refretry/refretry/transaction"
)

// UpdateRefCmd runs git update-ref with the caller's arguments.
type UpdateRefCmd struct {
	// Args are update-ref's arguments, verbatim (a passthrough command: CLI).
	Args []string `arg:"" optional:"" help:"git update-ref's arguments."`
	// GitArgs are git's global options other than -C (the shim's `git -c k=v
	// --git-dir=… update-ref`), passed on before update-ref; see shim.go.
	GitArgs []string `kong:"-"`
}

// Run runs the update, retrying lock contention.
func (c *UpdateRefCmd) Run(in *invocation) error {
	if err := in.check(); err != nil {
		return err
	}
	args := transaction.ParseArgs(c.Args)
	lg := in.log("update-ref")
	stdin, stderr := in.s.Stdin, in.s.Stderr
	switch {
	case !lg.Eager() && !args.Understood:
		// git runs once with the caller's own stderr (a terminal stays a terminal), and
		// nothing can turn logging on before it ends.
	case !args.Understood:
		// git runs once, unwrapped, with no attempt record: decide now so that its
		// stderr goes through the relay.
		lg.Decide()
		stderr = lg.Stderr()
	default:
		stderr = lg.Stderr()
	}
	r := &transaction.Runner{
		Git: in.git(), Dirs: in.opts.Dirs, Env: in.env,
		Settings:  in.settings,
		OnAttempt: lg.Attempt,
		Note:      lg.Note,
		// The shim's git global options (shim.go).
		GlobalArgs: c.GitArgs,
	}
	opts := cliopts.UpdateRef{
		// The summary names the refs of a --stdin batch: counted as the input is read.
		CountRefs: lg.Eager(),
		// Signals are caught only once the run waits (signals.go).
		BeforeWait: armer(in.ctx),
	}
	var res transaction.Result
	refs := func() report.Refs { return c.refs(in, args, res, opts.Store) }
	start := time.Now()
	if out, ok := c.join(in, args, &opts); ok {
		if out.Applied {
			var err error
			if len(out.Stderr) > 0 { // normally nothing: no write, not even an empty one
				_, err = stderr.Write(out.Stderr)
			}
			res = transaction.Result{Updates: 1, Refs: []string{args.Ref()}}
			lg.Attempt(retry.Attempt{Number: 1, Duration: time.Since(start), Final: true})
			lg.Finish(0, nil, refs)
			return err
		}
		if out.Unknown {
			// Neither applied nor safe to run again (docs/coalescing.md, "Crash safety").
			err := &group.UnknownError{Ref: args.Ref()}
			res = transaction.Result{Updates: 1, Refs: []string{args.Ref()}}
			lg.Attempt(retry.Attempt{Number: 1, Duration: time.Since(start), Err: err, Final: true})
			lg.Finish(report.ExitFatal, err, refs)
			return exitError(report.ExitFatal)
		}
		defer out.Lease.Release()
	}
	res, err := r.Run(cliopts.WithUpdateRef(in.ctx, opts), c.Args, stdin, in.s.Stdout, stderr)
	lg.Finish(res.ExitCode, err, refs) // refretry's line about a failure, and the summary when logging
	if errors.Is(err, failure.ErrGitNotFound) {
		return exitError(report.ExitGitMissing)
	}
	if res.ExitCode != 0 {
		return exitError(res.ExitCode)
	}
	return nil
}

// refs are the refs the command updates, for the summary, and the backend: the
// store's format when join found it, else when it can be told without git.
func (c *UpdateRefCmd) refs(in *invocation, args transaction.Args, res transaction.Result, store repo.Store) report.Refs {
	refs := report.Refs{Updates: res.Updates, Names: res.Refs, Truncated: res.Updates > len(res.Refs)}
	if store.Dir == "" {
		if d, ok := repo.Discover(in.opts.Dirs, in.env); ok {
			store, _ = d.Locate(in.env, nil)
		}
	}
	refs.Backend = store.Format
	return refs
}

// join hands a single-ref update to its repository's group commit when it may join
// one (internal/group): coalescing not switched off, a form a group can carry, no
// git options of the shim's, the repository found in-process and its ref store known
// (repo.Dirs.Locate: git config is asked only when the refs live outside the
// repository), and reftable unless coalescing was asked for. ok is false when it may not; otherwise out says whether
// it was applied, or else holds the line (out.Lease) while the update runs the usual
// way. The repository it found goes into opts, for the run.
func (c *UpdateRefCmd) join(in *invocation, args transaction.Args, opts *cliopts.UpdateRef) (out group.Outcome, ok bool) {
	co := &in.opts.Coalesce
	asked, off := co.V && co.given, !co.V && co.given
	if off || !args.Understood || args.Stdin || len(c.GitArgs) > 0 || !platform.RendezvousSupported {
		return out, false
	}
	u, o, ok := group.Parse(args.Raw)
	if !ok {
		return out, false
	}
	d, ok := repo.Discover(in.opts.Dirs, in.env)
	if !ok {
		return out, false
	}
	// Where git keeps the refs: from the file system in the usual layouts, else (a
	// store outside the repository) from git config, one git.
	store, ok := d.Locate(in.env, func() (string, error) {
		return repo.ReadStorage(gitexec.Command(in.ctx, in.git(), in.opts.Dirs, in.env, repo.StorageArgs...))
	})
	if !ok {
		return out, false
	}
	opts.GitDir, opts.CommonDir, opts.Store = d.GitDir, d.CommonDir, store // the Runner need not look again
	reftable := store.Reftable()
	if !asked && !reftable {
		// On the files backend writers of distinct refs do not contend, and one
		// git per update uses both cores where a group's git uses one: by default
		// each runs its own (docs/coalescing.md has the measurements).
		return out, false
	}
	return group.Join(in.ctx, group.Config{
		Git: in.git(), Dirs: in.opts.Dirs, Env: in.env, GitDir: d.GitDir, CommonDir: d.CommonDir, Store: store,
		Update: u, Options: o,
		Default: !asked,
		Allowed: func() bool { return coalesceAllowed(in) },
		GiveUp:  func(waited time.Duration) (bool, time.Duration) { return groupGiveUp(in, waited) },
	}), true
}

// coalesceAllowed is git config's say on default coalescing (asked only by a leader
// about to commit a group, that is under contention): refretry.coalesce unset or true.
func coalesceAllowed(in *invocation) bool {
	on, ok, err := in.opts.Coalesce.fromConfig(in.readConfig())
	return err != nil || !ok || on
}

// groupWaitBeforeConfig is how long an invocation waits for a group's leader before
// it reads git config for its budget (a git process): in a storm of writers, waits of
// a second or two are common, and a lookup each would cost more than the wait.
const groupWaitBeforeConfig = 10 * time.Second

// groupGiveUp says whether an invocation that has waited this long for a group's
// leader should run alone: its budget (--timeout, REFRETRY_TIMEOUT, else git config
// refretry.timeout, read only after groupWaitBeforeConfig) is spent. If not, again
// is when to ask next: when the budget, or the wait before reading git config, ends.
func groupGiveUp(in *invocation, waited time.Duration) (giveUp bool, again time.Duration) {
	d := in.opts.Timeout.V
	if !in.opts.Timeout.given {
		if waited < groupWaitBeforeConfig {
			return false, groupWaitBeforeConfig - waited
		}
		s, err := in.settings()
		if err != nil {
			return true, 0 // alone, where the bad setting is reported
		}
		d = s.Policy.Timeout
	}
	if d <= 0 {
		return false, 0 // no budget: the wait is not bounded
	}
	return waited >= d, d - waited
}
