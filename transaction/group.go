package transaction

import (
	"context"
	"time"

	"github.com/refretry/refretry/internal/gitexec"
	"github.com/refretry/refretry/internal/group"
	"github.com/refretry/refretry/internal/platform"
	"github.com/refretry/refretry/internal/repo"
	"github.com/refretry/refretry/retry"
)

// Group is how a Runner's one-ref updates join their repository's group commit
// (docs/coalescing.md): concurrent invocations on one repository hand their updates
// to one of them, which commits them all with one git. An update joins only in a
// form a group can carry (full object ids, a plain ref under refs/ that all worktrees
// share, each option on its own), without GlobalArgs, where the system has the
// rendezvous it needs (Linux), and with the repository and its ref store found
// (in-process, or the store's place from git config). Otherwise, and whenever a group
// does not take it, the update runs the usual way.
type Group struct {
	// Always joins a group on every ref backend (refretry's --coalesce). Otherwise an
	// update joins only on reftable, whose writers all take one lock: on the files
	// backend writers of distinct refs do not contend, and one git per update uses
	// both cores where a group's git uses one.
	Always bool
	// Allowed is asked, unless Always is set, by a leader about to commit a group
	// (that is, under contention) whether it may form one; nil means yes. refretry
	// asks git config's refretry.coalesce.
	Allowed func() bool
	// Timeout is how long an update waits for a group's leader before it runs alone:
	// 0 means the Settings' Policy.Timeout, looked up only once the wait has lasted
	// 10 s (a lookup may cost a git process). A negative Timeout, like a
	// Policy.Timeout of 0, does not bound the wait.
	Timeout time.Duration
}

// UnknownError is a one-ref update handed to a group commit whose git had not ended
// when the budget ran out: whether it was applied cannot be told, so it is neither
// reported applied nor run again (docs/coalescing.md, "Crash safety").
type UnknownError struct{ Ref string }

func (e *UnknownError) Error() string {
	return "the outcome of the update of " + e.Ref + " is unknown: the group commit's git it was handed to " +
		"was still running when the budget ran out; look at the ref before running the update again"
}

// joinGroup offers a one-ref update to its repository's group commit. settled is set
// when the group settled it (applied, or its outcome unknown): res and err are then
// the run's. Otherwise the update runs the usual way, and release, once it has run,
// passes on the line this process may hold meanwhile.
func (r *run) joinGroup(ctx context.Context, args Args) (settled bool, res Result, release func(), err error) {
	start := time.Now()
	out, ok := r.join(ctx, args)
	if !ok {
		return false, res, func() {}, nil
	}
	res = Result{Updates: 1, Refs: []string{args.Ref()}}
	switch {
	case out.Applied:
		if len(out.Stderr) > 0 { // normally nothing: no write, not even an empty one
			if _, err = r.stderr.Write(out.Stderr); err != nil {
				res.ExitCode = exitFatal
			}
		}
		r.attempted(retry.Attempt{Number: 1, Duration: time.Since(start), Final: true})
		return true, res, nil, err
	case out.Unknown:
		err = &UnknownError{Ref: args.Ref()}
		res.ExitCode = exitFatal
		r.attempted(retry.Attempt{Number: 1, Duration: time.Since(start), Err: err, Final: true})
		return true, res, nil, err
	}
	return false, res, out.Lease.Release, nil
}

// exitFatal is the exit code of a run that failed for a reason of refretry's, as
// git's die().
const exitFatal = 128

// join hands a one-ref update to its repository's group commit when it may join one
// (see Group). ok is false when it may not; otherwise out says whether it was applied,
// or else holds the line (out.Lease) while the update runs the usual way. The
// repository and store it finds are the run's, which need not look again.
func (r *run) join(ctx context.Context, args Args) (out group.Outcome, ok bool) {
	if r.Group == nil || !args.Understood || args.Stdin || len(r.GlobalArgs) > 0 || !platform.RendezvousSupported {
		return out, false
	}
	u, o, ok := group.Parse(args.Raw)
	if !ok {
		return out, false
	}
	d, ok := repo.Discover(r.Dirs, r.Env)
	if !ok {
		return out, false
	}
	// Where git keeps the refs: from the file system in the usual layouts, else (a
	// store outside the repository) from git config, one git.
	store, ok := d.Locate(r.Env, func() (string, error) {
		return repo.ReadStorage(gitexec.Command(ctx, r.GitPath(), r.Dirs, r.Env, repo.StorageArgs...))
	})
	if !ok {
		return out, false
	}
	r.discovery, r.found = &d, store
	if !r.Group.Always && !store.Reftable() {
		return out, false
	}
	return group.Join(ctx, group.Config{
		Git: r.GitPath(), Dirs: r.Dirs, Env: r.Env, GitDir: d.GitDir, CommonDir: d.CommonDir, Store: store,
		Update: u, Options: o,
		Default: !r.Group.Always, Allowed: r.Group.Allowed,
		GiveUp: r.groupGiveUp,
	}), true
}

// groupWaitBeforeSettings is how long an update waits for a group's leader before it
// looks up its budget in the settings (for refretry, a git process): in a storm of
// writers, waits of a second or two are common, and a lookup each would cost more
// than the wait.
const groupWaitBeforeSettings = 10 * time.Second

// groupGiveUp says whether an update that has waited this long for a group's leader
// should run alone: its budget (Group.Timeout, else the settings' Policy.Timeout,
// looked up only after groupWaitBeforeSettings) is spent. If not, again is when to
// ask next: when the budget, or the wait before looking it up, ends.
func (r *run) groupGiveUp(waited time.Duration) (giveUp bool, again time.Duration) {
	d := r.Group.Timeout
	if d == 0 {
		if waited < groupWaitBeforeSettings {
			return false, groupWaitBeforeSettings - waited
		}
		s, err := r.settings()
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
