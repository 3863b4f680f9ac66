package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/refretry/refretry/internal/text"

	"github.com/refretry/refretry/internal/group"
	"github.com/refretry/refretry/internal/platform"
	"github.com/refretry/refretry/internal/repo"
	"github.com/refretry/refretry/retry"
	"github.com/refretry/refretry/transaction"
)

// UpdateRefCmd runs git update-ref with the caller's arguments.
type UpdateRefCmd struct {
	// Args are update-ref's arguments, verbatim; run fills them in, kong never sees them.
	Args []string `kong:"-"`
	// GitArgs are git's global options other than -C (the shim's `git -c k=v
	// --git-dir=… update-ref`), passed on before update-ref; see shim_cmd.go.
	GitArgs []string `kong:"-"`
}

// Run runs the update, retrying lock contention.
func (c *UpdateRefCmd) Run(ctx context.Context, g *Globals, s Streams, e env) error {
	if err := checkFlags(g, e); err != nil {
		return err
	}
	git := gitPath(g, e)
	mode, err := coalescing(g, e) // config.go, --coalesce
	if err != nil {
		return err
	}
	args := transaction.ParseArgs(c.Args)
	lg, ls, err := startLog(ctx, g, e, git, s, args) // logging.go
	if err != nil {
		return err
	}
	r := &transaction.Runner{
		Git: git, Dirs: g.Dirs, Env: e,
		Stdin: ls.Stdin, Stdout: s.Stdout, Stderr: ls.Stderr,
		Settings: func() (transaction.Settings, error) {
			return resolveSettings(ctx, g, e, git)
		},
		OnAttempt: lg.attempt,
		// Signals are caught only once the run waits (main.go).
		BeforeWait: armer(ctx),
		// The shim's git global options (shim_cmd.go).
		GlobalArgs: c.GitArgs,
	}
	start := time.Now()
	if out, ok := c.join(ctx, g, e, git, mode, args, r); ok {
		if out.Applied {
			_, err := ls.Stderr.Write(out.Stderr)
			lg.attempt(retry.Attempt{Number: 1, Duration: time.Since(start), Final: true})
			lg.finish(0, nil)
			return err
		}
		defer out.Lease.Release()
	}
	code, err := r.Run(ctx, args)
	lg.finish(code, err) // prints report's line, and the summary when logging
	if errors.Is(err, transaction.ErrGitNotFound) {
		return exitError(exitGitMissing)
	}
	if code != 0 {
		return exitError(code)
	}
	return nil
}

// join hands a single-ref update to its repository's group commit when it may join
// one (internal/group): coalescing not switched off, a form a group can carry, no
// git options of the shim's, the repository found in-process, and reftable unless
// coalescing was asked for. ok is false when it may not; otherwise out says whether
// it was applied, or else holds the line (out.Lease) while the update runs the usual
// way.
func (c *UpdateRefCmd) join(ctx context.Context, g *Globals, e env, git string, mode coalesceMode, args transaction.Args, r *transaction.Runner) (out group.Outcome, ok bool) {
	if mode == coalesceOff || !args.Understood || args.Stdin || len(c.GitArgs) > 0 || !platform.RendezvousSupported {
		return out, false
	}
	u, o, ok := group.Parse(args.Raw)
	if !ok {
		return out, false
	}
	d, ok := repo.Discover(g.Dirs, e)
	if !ok {
		return out, false
	}
	r.GitDir, r.CommonDir = d.GitDir, d.CommonDir // the Runner need not look again
	reftable := d.Reftable()
	if mode == coalesceDefault && !reftable {
		// On the files backend writers of distinct refs do not contend, and one
		// git per update uses both cores where a group's git uses one: by default
		// each runs its own (docs/coalescing.md has the measurements).
		return out, false
	}
	return group.Join(ctx, group.Config{
		Git: git, Dirs: g.Dirs, Env: e, GitDir: d.GitDir, CommonDir: d.CommonDir, Reftable: reftable,
		Update: u, Options: o,
		Default: mode == coalesceDefault,
		Allowed: func() bool { return coalesceAllowed(ctx, g, e, git) },
		GiveUp:  func(waited time.Duration) bool { return groupGiveUp(ctx, g, e, git, waited) },
	}), true
}

// groupWaitBeforeConfig is how long an invocation waits for a group's leader before
// it reads git config for its budget (a git process): in a storm of writers, waits of
// a second or two are common, and a lookup each would cost more than the wait.
const groupWaitBeforeConfig = 10 * time.Second

// groupGiveUp says whether an invocation that has waited this long for a group's
// leader should run alone: its budget (--timeout, REFRETRY_TIMEOUT, else git config
// refretry.timeout, read only after groupWaitBeforeConfig) is spent.
func groupGiveUp(ctx context.Context, g *Globals, e env, git string, waited time.Duration) bool {
	var d time.Duration
	for _, st := range settingsTable(g) {
		if st.flag != "--timeout" {
			continue
		}
		v, _ := st.explicit(e)
		if v == "" && waited < groupWaitBeforeConfig {
			return false
		}
		s, err := resolveSettings(ctx, g, e, git)
		if err != nil {
			return true // alone, where the bad setting is reported
		}
		d = s.Policy.Timeout
	}
	return d > 0 && waited >= d
}

// reportAttempt prints one line per retry: which attempt failed, why, and how long
// refretry waits before the next. cause names the failure in the command's terms.
func reportAttempt(w io.Writer, a retry.Attempt, cause func(error) string) {
	if a.Final || a.Err == nil {
		return
	}
	fmt.Fprintf(w, "refretry: attempt %d failed (%s); retrying in %v\n",
		a.Number, cause(a.Err), a.Delay.Round(time.Millisecond))
}

// reportLoopEnd prints refretry's line when the retry loop itself ended the run: the
// settings a retry needed were bad, or the budget ran out. It reports whether it
// printed one. update-ref and push share it.
func reportLoopEnd(w io.Writer, err error, cause func(error) string) bool {
	var re *retry.ResolveError
	var ex *retry.ExhaustedError
	switch {
	case errors.As(err, &re):
		fmt.Fprintf(w, "refretry: not retried: %v\n", re.Err)
	case errors.As(err, &ex):
		fmt.Fprintf(w, "refretry: gave up after %s in %v (%s); last failure: %s\n",
			attempts(ex.Attempts), ex.Elapsed.Round(time.Millisecond), ex.Reason, cause(ex.Err))
	default:
		return false
	}
	return true
}

// report prints refretry's own line about a final failure, after git's output: a
// summary when it gave up on contention, the facts about a stale lock, or why git
// could not run. Failures git alone explains get nothing extra.
func report(w io.Writer, git string, err error) {
	var se *transaction.StartError
	var te *transaction.Error
	var l *transaction.LockedError
	switch {
	case errors.As(err, &se):
		fmt.Fprintf(w, "refretry: cannot run git (%s): %v\n", git, se.Err)
	case reportLoopEnd(w, err, cause):
	case errors.As(err, &te) && te.Class == transaction.ClassStaleLock && errors.As(err, &l):
		fmt.Fprintf(w, "refretry: %s\n", staleAdvice(l))
	case errors.As(err, &te):
		// git's message says it all.
	default:
		fmt.Fprintf(w, "refretry: %v\n", err)
	}
}

// cause is a one-line reason for an attempt's failure.
func cause(err error) string {
	var te *transaction.Error
	if !errors.As(err, &te) {
		return err.Error()
	}
	var l *transaction.LockedError
	if errors.As(err, &l) && l.Lock != "" {
		return fmt.Sprintf("%s on %s", te.Class, l.Lock)
	}
	return fmt.Sprintf("%s: %s", te.Class, text.FirstLine(te.Message))
}

func staleAdvice(l *transaction.LockedError) string {
	msg := fmt.Sprintf("stale lock %s", l.Lock)
	var facts []string
	if l.Age > 0 {
		facts = append(facts, "age "+l.Age.Round(time.Second).String())
	}
	if l.PID > 0 {
		facts = append(facts, fmt.Sprintf("holder pid %d", l.PID))
	}
	if len(facts) > 0 {
		msg += " (" + strings.Join(facts, ", ") + ")"
	}
	msg += ": " + l.StaleReason
	if l.Lock != "" {
		msg += fmt.Sprintf("; make sure no git process is using this repository, then remove it: rm -f %s", text.ShellQuote(l.Lock))
		if pidFile := pidFileOf(l.Lock); pidFile != "" {
			msg += " " + text.ShellQuote(pidFile)
		}
	}
	return msg
}

// attempts is "1 attempt" or "N attempts".
func attempts(n int) string {
	if n == 1 {
		return "1 attempt"
	}
	return fmt.Sprintf("%d attempts", n)
}
