package cli

import (
	"github.com/refretry/refretry/internal/repo"
	"github.com/refretry/refretry/internal/report"
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
	stderr := in.s.Stderr
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
		Config: in.runnerConfig(lg),
		// The shim's git global options (shim.go).
		GlobalArgs: c.GitArgs,
		Group:      c.group(in),
		// The summary names the refs of a --stdin batch: counted as the input is read.
		CountRefs: lg.Eager(),
		// Signals are caught only once the run waits (signals.go).
		BeforeWait: func() { catchSignals(in.arm) },
	}
	res, err := r.RunArgs(in.ctx, args, in.s.Stdin, in.s.Stdout, stderr)
	// refretry's line about a failure, and the summary when logging
	return ended(lg, res.ExitCode, err, func() report.Refs { return refs(in, res) })
}

// refs are the refs the command updates, for the summary, and the backend: the
// store's format when the run found it, else when it can be told without git.
func refs(in *invocation, res transaction.Result) report.Refs {
	refs := report.Refs{Updates: res.Updates, Names: res.Refs, Truncated: res.Updates > len(res.Refs), Backend: res.Backend}
	if refs.Backend == "" {
		if d, ok := repo.Discover(in.opts.Dirs, in.env); ok {
			store, _ := d.Locate(in.env, nil)
			refs.Backend = store.Format
		}
	}
	return refs
}

// group is how the update may join a group commit (transaction.Group): on reftable
// by default, on every backend with --coalesce, never when REFRETRY_COALESCE is false; nil when
// it may not. --timeout (or REFRETRY_TIMEOUT) bounds the wait for a leader from the
// start; git config's budget is read only when the wait is long.
func (c *UpdateRefCmd) group(in *invocation) *transaction.Group {
	co := &in.opts.Coalesce
	asked, off := co.V && co.given, !co.V && co.given
	if off {
		return nil
	}
	g := &transaction.Group{Always: asked, Allowed: func() bool { return coalesceAllowed(in) }}
	if in.opts.Timeout.given {
		g.Timeout = in.opts.Timeout.V
		if g.Timeout == 0 {
			g.Timeout = -1 // a budget of no time: the wait is not bounded
		}
	}
	return g
}

// coalesceAllowed is git config's say on default coalescing (asked only by a leader
// about to commit a group, that is under contention): refretry.coalesce unset or true.
func coalesceAllowed(in *invocation) bool {
	on, ok, err := in.opts.Coalesce.fromConfig(in.readConfig())
	return err != nil || !ok || on
}
