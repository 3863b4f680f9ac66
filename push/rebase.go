package push

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/refretry/refretry/failure"
	"github.com/refretry/refretry/internal/engine"
	"github.com/refretry/refretry/internal/gitexec"
	"github.com/refretry/refretry/internal/gitmsg"
	"github.com/refretry/refretry/internal/replay"
)

// RebaseError says that the pushed commits could not be put on the remote's new tip.
// Nothing local changed: the replay writes new objects only, and the branch, HEAD and
// the work tree are moved only after it succeeded.
type RebaseError struct {
	From     string   // the pushed source, as git printed it ("HEAD", "refs/heads/main", a commit)
	Onto     string   // the remote tip the commits were replayed onto
	Orig     string   // the commit the source named
	Conflict bool     // a commit's changes conflicted with the remote's
	Paths    []string // the conflicting paths
	Output   string   // why, when it was not a conflict
}

func (e *RebaseError) Error() string {
	what := "could not be done"
	if e.Conflict {
		what = "stopped on a conflict"
		if len(e.Paths) > 0 {
			what += " in " + strings.Join(e.Paths, ", ")
		}
	}
	msg := fmt.Sprintf("rebase of %s onto the remote tip %s %s; nothing was changed locally (%s is still %s)",
		shortRef(e.From), replay.Short(e.Onto), what, shortRef(e.From), replay.Short(e.Orig))
	if e.Output != "" {
		msg += " (" + gitmsg.LastMessage([]byte(e.Output)) + ")"
	}
	return msg
}

// cure is what to do before the next attempt of a push that was behind the remote.
type cure struct {
	ref RefStatus // the ref that was behind
}

// cureTarget returns the cure for an attempt when a rebase or a regeneration can help:
// exactly one ref behind the remote, and every other rejected ref only collateral,
// lock contention, a transport failure or a race.
func (r *pushRun) cureTarget(a *engine.Attempt, v verdict) *cure {
	var target *RefStatus
	for i, c := range v.classes {
		switch c {
		case failure.Behind:
			if target != nil {
				a.Note("rebase", "--rebase: more than one ref is behind the remote; not rebasing")
				return nil
			}
			target = &v.report.Refs[i]
		case "", failure.LockContention, failure.Transport, failure.Race, failure.Unknown:
		default:
			return nil
		}
	}
	if target == nil || target.From == "" { // a deletion is never behind
		return nil
	}
	return &cure{ref: *target}
}

// applyCure fetches the remote's tip of the ref that was behind and puts this push's
// commits on it: replayed (Rebase), or made again by the caller's command
// (Regenerate; also when the replay conflicts). It may rewrite args (a commit given by
// its name is pushed as the new one). When the tip is the pushed commit itself and the
// push named no other ref, an earlier attempt (or an earlier copy of this one) was
// applied: the run is a success the remote proves. A transport failure of the fetch
// is a retryable *failure.Error; a failed rebase or regeneration is a *failure.Error
// of class Rebase or Regenerate.
func (r *pushRun) applyCure(ctx context.Context, a *engine.Attempt, args *Args, url string, c cure) (engine.Next, error) {
	onto, err := r.fetchTip(ctx, r.env, *args, url, c.ref.To)
	if err != nil {
		return engine.Stop, err
	}
	if onto != r.onto {
		// Another job's push landed: the pipeline moves, whether or not this push
		// gets through next time (a budget that counts time without progress).
		r.onto = onto
		a.Progress()
	}
	src := r.repo().RevParse(ctx, c.ref.From+"^{commit}")
	switch {
	case src == "":
		return engine.Stop, rebaseFailure(&RebaseError{From: c.ref.From, Onto: onto, Output: "cannot read " + c.ref.From})
	case src == onto && len(r.verdict.report.Refs) == 1:
		r.named = r.verdict.report.Refs
		return r.proved(a), nil
	}
	repo, err := r.replayer(ctx, a)
	if err != nil {
		return engine.Stop, err
	}
	if r.rebase {
		deepen := func(option string) error { return r.fetch(ctx, r.env, *args, url, c.ref.To, option) }
		if err := r.repo().Meet(ctx, src, onto, deepen); err != nil {
			return engine.Stop, err
		}
		tip, err := repo.Line(ctx, src, onto)
		if err == nil {
			if err := r.adopt(ctx, a, args, c.ref, src, tip, onto); err != nil {
				return engine.Stop, err
			}
			return engine.Retry, nil
		}
		re := &RebaseError{From: c.ref.From, Onto: onto, Orig: src}
		var conflict *replay.ConflictError
		var unsigned *replay.SignError
		if errors.As(err, &unsigned) {
			return engine.Stop, unsigned.Failure(nothingPushed(c.ref.From, src))
		}
		if errors.As(err, &conflict) {
			re.Conflict, re.Paths = true, conflict.Paths
		} else {
			re.Output = err.Error()
		}
		if r.Regenerate == "" {
			return engine.Stop, rebaseFailure(re)
		}
		a.Note("rebase", re.Error()+"; running the --regenerate command instead")
	}
	switch done, err := r.regenerate(ctx, a, repo, args, c.ref, src, onto); {
	case err != nil:
		return engine.Stop, err
	case done:
		r.nothing = true
		return engine.Done, nil
	}
	return engine.Retry, nil
}

// replayer is the repository the push's replays write in: whether it signs its
// commits read once a run (a gather-sized rebase writes many), and a note when a
// commit is signed only because its original was.
func (r *pushRun) replayer(ctx context.Context, a *engine.Attempt) (replay.Repo, error) {
	repo := r.repo()
	if r.sign == nil {
		sign, err := repo.ReadSigning(ctx)
		if err != nil {
			return repo, &failure.Error{Command: "push", Class: failure.Other, ExitCode: 128, Message: err.Error()}
		}
		r.sign = &sign
	}
	repo.Sign, repo.Note = r.sign, func(msg string) { a.Note("rebase", msg) }
	return repo, nil
}

// nothingPushed is what became of a push that stopped before it pushed again: from,
// the pushed source, is still orig.
func nothingPushed(from, orig string) string {
	return fmt.Sprintf("nothing was pushed (%s is still %s)", shortRef(from), replay.Short(orig))
}

// rebaseFailure is a failed rebase as the run's failure: exit 1, as git's for the
// rejected push, with the rebase's own words as refretry's last line.
func rebaseFailure(re *RebaseError) *failure.Error {
	return &failure.Error{Command: "push", Class: failure.Rebase, ExitCode: 1, Message: re.Error(), Advice: re.Error(), Cause: re}
}

// fetchTip fetches the remote's value of ref and returns it.
func (r *pushRun) fetchTip(ctx context.Context, env []string, args Args, url, ref string) (string, error) {
	if err := r.fetch(ctx, env, args, url, ref); err != nil {
		return "", err
	}
	onto := r.repo().RevParse(ctx, "FETCH_HEAD^{commit}")
	if onto == "" {
		return "", &failure.Error{Command: "push", ExitCode: 128, Class: failure.Other, Message: "fetch of the remote tip: FETCH_HEAD is not a commit"}
	}
	return onto, nil
}

// fetch fetches ref from the push's remote, with extra options, for a cure.
func (r *pushRun) fetch(ctx context.Context, env []string, args Args, url, ref string, extra ...string) error {
	remote := args.remoteOr(url)
	// No maintenance: it would run after every lost race, in the caller's time.
	full := append([]string{"fetch", "-q", "--no-tags", "--no-auto-maintenance"}, extra...)
	cmd := r.command(ctx, env, append(full, remote, ref)...)
	var fetchErr gitexec.Capped
	cmd.Stderr = &fetchErr
	if err := cmd.Run(); err != nil {
		code, _ := gitexec.ExitCode(cmd.ProcessState)
		e := &failure.Error{Command: "push", ExitCode: code, Class: failure.Other,
			Message: "fetch of the remote tip: " + gitmsg.LastMessage(fetchErr.Bytes())}
		if te := transportFailure(fetchErr.Bytes(), e); te != nil {
			e.Class, e.Cause = failure.Transport, te
		}
		return e
	}
	return nil
}

// adopt makes the next attempt push tip in place of src, which the push named as
// s.From: the checked-out commit (HEAD, or the checked-out branch) moves to tip with
// the index and work tree (`git reset --keep`, which keeps uncommitted changes or
// refuses); another local branch is moved to tip; anything else (a commit's name,
// HEAD whose work tree could not follow) stays as it was, and the refspec that named
// it is rewritten to push tip.
func (r *pushRun) adopt(ctx context.Context, a *engine.Attempt, args *Args, s RefStatus, src, tip, onto string) error {
	how := "rebased"
	if tip == onto {
		how = "found every commit already on"
	}
	if moved := r.repo().Adopt(ctx, s.From, src, tip, "refretry push --rebase"); moved != "" {
		a.Note("rebase", fmt.Sprintf("%s %s onto the remote tip %s", how, shortRef(moved), replay.Short(onto)))
		return nil
	}
	if !args.replaceSource(s, tip) {
		return rebaseFailure(&RebaseError{From: s.From, Onto: onto, Orig: src,
			Output: "no refspec among the arguments names " + s.From + ", so the rebased commit cannot be pushed in its place"})
	}
	a.Note("rebase", fmt.Sprintf("%s %s onto the remote tip %s as %s; pushing that commit, %s stays at %s",
		how, shortRef(s.From), replay.Short(onto), replay.Short(tip), shortRef(s.From), replay.Short(src)))
	return nil
}

// replaceSource rewrites the refspec among the arguments that pushed s (its source as
// git printed it, or that source's short branch or tag name) to push commit instead,
// keeping its destination and its force flag. It reports whether one was found.
func (a *Args) replaceSource(s RefStatus, commit string) bool {
	for i := a.refspecStart(); i >= 0 && i < len(a.Raw); i++ {
		spec := a.Raw[i]
		force := strings.HasPrefix(spec, "+")
		src, dst, hasDst := strings.Cut(strings.TrimPrefix(spec, "+"), ":")
		if src != s.From && "refs/heads/"+src != s.From && "refs/tags/"+src != s.From {
			continue
		}
		if !hasDst || dst == "" {
			dst = s.To
		}
		spec = commit + ":" + dst
		if force {
			spec = "+" + spec
		}
		raw := append([]string(nil), a.Raw...)
		raw[i] = spec
		a.Raw = raw
		return true
	}
	return false
}

// refspecStart is the index in Raw of the first refspec, after the options and the
// repository; -1 when there is no repository argument.
func (a *Args) refspecStart() int {
	for i := 0; i < len(a.Raw); i++ {
		arg := a.Raw[i]
		switch {
		case arg == "--":
			if i+1 < len(a.Raw) {
				return i + 2
			}
			return -1
		case TakesNextArg(arg):
			i++
		case !strings.HasPrefix(arg, "-") || arg == "-":
			return i + 1
		}
	}
	return -1
}

// shortRef is ref without refs/heads/.
func shortRef(ref string) string { return strings.TrimPrefix(ref, "refs/heads/") }

// repo is the repository the push runs in, for replays and the reads around them.
func (p *Runner) repo() replay.Repo {
	return replay.Repo{Git: p.GitPath(), Dirs: p.Dirs, GlobalArgs: p.GlobalArgs, Env: p.Env}
}

// output runs git and returns its trimmed standard output.
func (p *Runner) output(ctx context.Context, env []string, args ...string) (string, error) {
	out, err := p.command(ctx, env, args...).Output()
	return strings.TrimSpace(string(out)), err
}
