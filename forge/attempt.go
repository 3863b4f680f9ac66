package forge

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/refretry/refretry/failure"
	"github.com/refretry/refretry/internal/apicommit"
	"github.com/refretry/refretry/internal/engine"
	"github.com/refretry/refretry/internal/replay"
)

// Attempt is one landing: when the branch may have moved (the first attempt, and
// after a lost race or an unknown outcome), fetch it and replay the job's commits
// onto it; push the replay's objects to the staging ref when the route builds on
// them; then make the commits through the API.
func (u *run) Attempt(ctx context.Context, a *engine.Attempt) error {
	if u.fresh {
		if err := u.replay(ctx, a); err != nil {
			return err
		}
		u.fresh = false
		if u.nothing {
			return nil
		}
	}
	if u.plan.Objects && u.staged != u.tip {
		if err := u.stagePush(ctx, a, u.tip); err != nil {
			return err
		}
	}
	landed, err := u.plan.Land(ctx, u.Now())
	if err != nil {
		return err
	}
	u.landed = landed
	return nil
}

// Cure acts on a failed attempt: a lost race (behind) or an answer that may have
// been applied (unknown) is settled by the next attempt, which fetches the branch
// and replays the job's commits onto it (when the branch already has their changes,
// the landing is done), after the engine's pause. Anything else stands: retried with
// backoff when its class allows (a limit, a transport failure), else final.
func (u *run) Cure(ctx context.Context, a *engine.Attempt, f *failure.Error) (engine.Next, error) {
	if f.Class == failure.Behind || f.Class == failure.Unknown {
		u.fresh = true
		return engine.Retry, nil
	}
	return engine.Stop, nil
}

// replay fetches the branch, and replays the job's commits onto it without a work
// tree (internal/replay): the landing to make, checked against the forge's route.
// When the branch already has the job's changes, nothing is left to land.
func (u *run) replay(ctx context.Context, a *engine.Attempt) error {
	onto, err := u.fetchBranch(ctx, a)
	if err != nil {
		return err
	}
	if u.base != "" && onto != u.base {
		a.Progress() // another job landed: the pipeline moves
		a.Note("api", fmt.Sprintf("the branch %s moved to %s; replaying onto it", u.t.Branch, replay.Short(onto)))
	}
	u.base = onto
	if err := u.findSource(ctx, a, onto); err != nil {
		return err
	}
	tip, err := u.repo.Line(ctx, u.src, onto)
	if err != nil {
		return replayFailure(err, u.t.Source, u.src, onto)
	}
	u.tip = tip
	if u.nothing, err = u.landedAlready(ctx, onto, tip); err != nil || u.nothing {
		return err
	}
	list, err := u.repo.Output(ctx, "rev-list", "--reverse", tip, "^"+onto)
	if err != nil {
		return err
	}
	commits, err := u.repo.ReadCommits(ctx, strings.Fields(list))
	if err != nil {
		return err
	}
	u.plan, err = u.ep.Plan(ctx, apicommit.Landing{Repo: u.repo, Branch: u.t.Branch, Base: onto, Commits: commits})
	return err
}

// findSource reads the source commit, once, and makes sure a shallow history reaches
// back to where the job's commits start (replay.Repo.Meet), which it remembers.
func (u *run) findSource(ctx context.Context, a *engine.Attempt, onto string) error {
	if u.src == "" {
		if u.src = u.repo.RevParse(ctx, u.t.Source+"^{commit}"); u.src == "" {
			return replayFailure(errors.New("cannot read "+u.t.Source), u.t.Source, "", onto)
		}
	}
	deepen := func(option string) error { return u.fetch(ctx, a, option) }
	if err := u.repo.Meet(ctx, u.src, onto, deepen); err != nil {
		return err
	}
	if u.origin == "" {
		u.origin, _ = u.repo.Output(ctx, "merge-base", u.src, onto)
	}
	return nil
}

// landedAlready reports whether the branch at onto has the job's changes already:
// every commit of the source is on it (tip is onto), or the replay changed nothing
// though the job's commits change something (an earlier attempt landed and its
// answer was lost, or another job made the same change). Commits that changed
// nothing to begin with are landed as they are.
func (u *run) landedAlready(ctx context.Context, onto, tip string) (bool, error) {
	if tip == onto {
		return true, nil
	}
	trees, err := u.repo.Output(ctx, "rev-parse", onto+"^{tree}", tip+"^{tree}", u.origin+"^{tree}", u.src+"^{tree}")
	if err != nil {
		return false, err
	}
	t := strings.Fields(trees)
	return len(t) == 4 && t[0] == t[1] && t[2] != t[3], nil
}

// replayFailure is a replay that could not be made (a conflict, a merge among the
// job's commits, a shallow history that does not reach): exit 1, said in one line.
func replayFailure(err error, from, src, onto string) error {
	var conflict *replay.ConflictError
	what := "could not be done (" + err.Error() + ")"
	if errors.As(err, &conflict) {
		what = "stopped on a conflict in " + strings.Join(conflict.Paths, ", ")
	} else if !errors.Is(err, replay.ErrUnsupported) && src != "" {
		return err
	}
	line := fmt.Sprintf("replay of %s onto the branch's tip %s %s; nothing was landed (%s is still %s)",
		from, replay.Short(onto), what, from, replay.Short(src))
	return &failure.Error{Command: "push", Class: failure.Rebase, ExitCode: 1, Message: line, Advice: line, Cause: err}
}

// Final ends the run: on success, the branch's new value fetched and the checkout
// moved to it, git's line for the ref; on failure, the forge's answer. The staging
// ref is removed either way.
func (u *run) Final(err error) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	u.dropStage(ctx)
	if errors.Is(err, failure.ErrGitNotFound) {
		return failure.ExitGitNotFound, err
	}
	if err == nil {
		u.finish(ctx)
		return 0, nil
	}
	var f *failure.Error
	if !errors.As(err, &f) {
		return 128, err
	}
	if f.Class == failure.Declined && f.Advice == "" {
		f.Advice = "the forge's rules refused the commit, so refretry did not retry: " + strings.Join(f.Policy, " ")
	}
	if f.Advice != f.Message {
		fmt.Fprintf(u.stderr, "error: %s\n", f.Message)
	}
	return f.ExitCode, err
}
