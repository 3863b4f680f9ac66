package forge

import (
	"context"
	"fmt"
	"strings"

	"github.com/refretry/refretry/failure"
	"github.com/refretry/refretry/internal/engine"
	"github.com/refretry/refretry/internal/gitexec"
	"github.com/refretry/refretry/internal/gitmsg"
	"github.com/refretry/refretry/internal/replay"
	"github.com/refretry/refretry/push"
)

// gitEnv is the environment of a git that talks to the remote: refretry's HTTP
// settings, with git's own wait on a 429 bounded by what the budget leaves.
func (u *run) gitEnv(a *engine.Attempt) []string {
	if a != nil && u.http.RateLimited() {
		return u.http.Attempt(u.env, a.Left())
	}
	return u.env
}

// fetchBranch fetches the branch from the remote and returns its value.
func (u *run) fetchBranch(ctx context.Context, a *engine.Attempt) (string, error) {
	if err := u.fetch(ctx, a); err != nil {
		return "", err
	}
	onto := u.repo.RevParse(ctx, "FETCH_HEAD^{commit}")
	if onto == "" {
		return "", &failure.Error{Command: "push", ExitCode: 128, Class: failure.Other, Message: "fetch of " + u.t.Branch + ": FETCH_HEAD is not a commit"}
	}
	return onto, nil
}

// fetch fetches the branch into FETCH_HEAD, with extra options (--deepen). A
// transport failure is a *failure.Error of class Transport, retried; any other
// failure (no such branch: the API commits only onto a branch that exists) is final.
func (u *run) fetch(ctx context.Context, a *engine.Attempt, extra ...string) error {
	// No maintenance: it would run after every lost race, in the job's time.
	args := append([]string{"fetch", "-q", "--no-tags", "--no-auto-maintenance"}, extra...)
	c, err := gitexec.Capture(u.repo.Command(ctx, u.gitEnv(a), append(args, u.t.Remote, "refs/heads/"+u.t.Branch)...))
	if err != nil || c.Code == 0 {
		return err
	}
	f := &failure.Error{Command: "push", ExitCode: c.Code, Class: failure.Other,
		Message: "fetch of " + u.t.Branch + ": " + gitmsg.LastMessage(c.Stderr)}
	if t := gitmsg.ReadTransport(c.Stderr); t.Line != "" && !t.Auth {
		f.Class, f.Wait, f.Refused = failure.Transport, t.RetryAfter, t.Refused
	}
	return f
}

// stagePush pushes tip to the staging ref, so that the remote has every object of
// its trees (the route makes commits of them): a ref of the run's own, forced, so
// nobody contends for it. A failure is git push's, classified as push classifies it.
func (u *run) stagePush(ctx context.Context, a *engine.Attempt, tip string) error {
	args := append(append([]string{"push"}, u.t.Options...), "--porcelain", "--force", u.t.Remote, tip+":"+u.stage)
	c, err := gitexec.Capture(u.repo.Command(ctx, u.gitEnv(a), args...))
	if err != nil {
		return err
	}
	if f := push.Classify(c.Code, c.Stdout, c.Stderr); f != nil {
		return f
	}
	u.staged = tip
	return nil
}

// dropStage removes the staging ref, when there is one (best effort: it is refretry's
// own, and harmless).
func (u *run) dropStage(ctx context.Context) {
	if u.staged == "" {
		return
	}
	args := append(append([]string{"push"}, u.t.Options...), "--porcelain", "--force-with-lease="+u.stage+":"+u.staged, u.t.Remote, ":"+u.stage)
	if c, err := gitexec.Capture(u.repo.Command(ctx, u.env, args...)); err == nil && c.Code == 0 {
		u.staged = ""
	}
}

// finish leaves the job's repository as push --rebase does: the landed commit
// fetched, and what the push named (HEAD, the checked-out branch, another local
// branch) moved to it; a commit given by name, or a work tree that cannot follow,
// stays. Then git push's line for the ref.
func (u *run) finish(ctx context.Context) {
	landed := u.landed
	if u.nothing {
		landed = u.base
		u.note("the branch %s already has the job's changes (an earlier attempt landed them, or another job made the same)", u.t.Branch)
	} else {
		u.note("landed %s on %s through %s (%s)", replay.Short(landed), u.t.Branch, u.plan.Route, u.plan.Signing)
	}
	switch {
	case u.fetch(ctx, nil) != nil || u.repo.RevParse(ctx, landed+"^{commit}") == "":
		u.note("could not fetch %s; %s stays at %s", replay.Short(landed), u.t.Source, replay.Short(u.src))
	default:
		if moved := u.repo.Adopt(ctx, u.t.Source, u.src, landed, "refretry push --api"); moved != "" {
			u.note("moved %s to %s", strings.TrimPrefix(moved, "refs/heads/"), replay.Short(landed))
		}
	}
	if u.nothing {
		fmt.Fprintf(u.stderr, "To %s\n = [up to date]      %s -> %s\n", u.url, u.t.Source, u.t.Branch)
		return
	}
	fmt.Fprintf(u.stderr, "To %s\n   %s..%s  %s -> %s\n", u.url, abbrev(u.base), abbrev(landed), u.t.Source, u.t.Branch)
}

func (u *run) note(format string, args ...any) {
	if u.Note != nil {
		u.Note("api", fmt.Sprintf(format, args...))
	}
}

// abbrev is an object name as git push's table shows it.
func abbrev(oid string) string {
	if len(oid) > 7 {
		return oid[:7]
	}
	return oid
}
