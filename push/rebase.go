package push

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/refretry/refretry/internal/gitexec"
	"github.com/refretry/refretry/internal/gitmsg"
	"github.com/refretry/refretry/internal/text"
)

// RebaseError says that rebasing the local commits onto the remote tip failed. The
// rebase was aborted; Restored says whether HEAD and the branch were verified to be
// back where they were.
type RebaseError struct {
	Branch   string // the checked-out branch, "refs/heads/…"
	Onto     string // the remote tip the rebase tried
	Orig     string // the commit the branch was at before the rebase
	Conflict bool   // the rebase stopped on a conflict (otherwise it did not start)
	Restored bool
	Output   string // git rebase's output
}

func (e *RebaseError) Error() string {
	b := strings.TrimPrefix(e.Branch, "refs/heads/")
	what := "could not start"
	if e.Conflict {
		what = "stopped on a conflict and was aborted"
	}
	msg := fmt.Sprintf("rebase of %s onto the remote tip %s %s", b, short(e.Onto), what)
	if e.Restored {
		msg += fmt.Sprintf("; %s is at %s as before", b, short(e.Orig))
	} else {
		msg += fmt.Sprintf("; %s could NOT be verified to be back at %s, check the repository", b, short(e.Orig))
	}
	if line := gitmsg.LastMessage([]byte(e.Output)); e.Output != "" && line != "no message" {
		msg += " (" + line + ")"
	}
	return msg
}

// rebaseTarget returns the ref to rebase when e can be cured by a rebase: exactly one
// ref behind the remote, pushed from the checked-out branch (by name or as HEAD), and
// every other rejected ref only collateral or lock contention.
func (p *Runner) rebaseTarget(ctx context.Context, e *Error) *RefStatus {
	var target *RefStatus
	for i, c := range e.classes {
		switch c {
		case ClassBehind:
			if target != nil {
				p.notify("--rebase: more than one ref is behind the remote; not rebasing")
				return nil
			}
			target = &e.Refs[i]
		case "", ClassLockContention, ClassTransport:
		default:
			return nil
		}
	}
	if target == nil {
		return nil
	}
	branch, err := p.output(ctx, p.Env, "symbolic-ref", "-q", "HEAD")
	if err != nil {
		p.notify("--rebase: HEAD is not on a branch; not rebasing")
		return nil
	}
	if target.From != "HEAD" && target.From != branch {
		p.notify(fmt.Sprintf("--rebase: %s is not the checked-out branch %s; not rebasing", target.From, branch))
		return nil
	}
	return target
}

// rebase fetches the remote's value of s.To and rebases the checked-out branch onto
// it. A transport failure of the fetch is returned as a retryable *Error; a failed
// rebase is aborted and returned as a *RebaseError.
func (p *Runner) rebase(ctx context.Context, env []string, args Args, url string, s RefStatus) error {
	remote := args.Remote
	if remote == "" {
		remote = url
	}
	cmd := p.command(ctx, env, "fetch", "-q", "--no-tags", remote, s.To)
	var fetchErr gitexec.Capped
	cmd.Stderr = &fetchErr
	if err := cmd.Run(); err != nil {
		code, _ := gitexec.ExitCode(cmd.ProcessState)
		e := &Error{ExitCode: code, Class: ClassOther, Message: "fetch before rebase: " + gitmsg.LastMessage(fetchErr.Bytes())}
		if te, auth := transportFailure(fetchErr.Bytes()); te != nil && !auth {
			e.Class, e.Cause = ClassTransport, te
		}
		return e
	}
	onto, err := p.output(ctx, p.Env, "rev-parse", "--verify", "-q", "FETCH_HEAD^{commit}")
	if err != nil {
		return &Error{ExitCode: 128, Class: ClassOther, Message: "fetch before rebase: FETCH_HEAD is not a commit"}
	}
	branch, _ := p.output(ctx, p.Env, "symbolic-ref", "-q", "HEAD")
	orig, err := p.output(ctx, p.Env, "rev-parse", "--verify", "-q", "HEAD")
	if err != nil {
		return &RebaseError{Branch: branch, Onto: onto, Output: "cannot read HEAD"}
	}
	reb := p.command(ctx, append(p.Env, "GIT_EDITOR=:", "GIT_SEQUENCE_EDITOR=:"), "rebase", "-q", onto)
	var out gitexec.Capped
	reb.Stdout, reb.Stderr = &out, &out
	if reb.Run() == nil {
		p.notify(fmt.Sprintf("rebased %s onto the remote tip %s", strings.TrimPrefix(branch, "refs/heads/"), short(onto)))
		return nil
	}
	re := &RebaseError{Branch: branch, Onto: onto, Orig: orig, Output: out.String()}
	if p.rebaseInProgress(ctx) {
		re.Conflict = true
		abort := p.command(ctx, p.Env, "rebase", "--abort")
		abort.Stdout, abort.Stderr = &out, &out
		_ = abort.Run() // the checks below say whether it worked
	}
	nowBranch, _ := p.output(ctx, p.Env, "symbolic-ref", "-q", "HEAD")
	nowHead, _ := p.output(ctx, p.Env, "rev-parse", "--verify", "-q", "HEAD")
	re.Restored = nowBranch == branch && nowHead == orig && !p.rebaseInProgress(ctx)
	return re
}

// rebaseInProgress reports whether a rebase is stopped in the repository.
func (p *Runner) rebaseInProgress(ctx context.Context) bool {
	for _, dir := range []string{"rebase-merge", "rebase-apply"} {
		path, err := p.output(ctx, p.Env, "rev-parse", "--path-format=absolute", "--git-path", dir)
		if err != nil {
			continue
		}
		if isDir(path) {
			return true
		}
	}
	return false
}

// output runs git and returns its trimmed standard output.
func (p *Runner) output(ctx context.Context, env []string, args ...string) (string, error) {
	out, err := p.command(ctx, env, args...).Output()
	return strings.TrimSpace(string(out)), err
}

func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// Exit is what `refretry push --rebase` exits with when the rebase failed.
func (e *RebaseError) Exit() int { return 1 }

// Kind is "rebase".
func (e *RebaseError) Kind() string { return "rebase" }

// Line is the first line of the error.
func (e *RebaseError) Line() string { return text.FirstLine(e.Error()) }

// Reason is the first line of the error.
func (e *RebaseError) Reason() string { return e.Line() }

// Held is no lock.
func (e *RebaseError) Held() (string, time.Duration, int) { return "", 0, 0 }

// HolderUnseen is false: there is no lock.
func (e *RebaseError) HolderUnseen() bool { return false }

// Advice is the whole error: git's output does not say what refretry did.
func (e *RebaseError) Advice() string { return e.Error() }
