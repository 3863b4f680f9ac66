package push

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/refretry/refretry/failure"
	"github.com/refretry/refretry/internal/engine"
	"github.com/refretry/refretry/internal/gitexec"
	"github.com/refretry/refretry/internal/replay"
)

// OriginalRef is where --regenerate keeps the commit a job made before its first
// regeneration, so that it is never lost: refs/refretry/original/<destination>, e.g.
// refs/refretry/original/refs/heads/main. Each later regeneration starts from the
// remote's tip again; this ref keeps the job's own commit.
const OriginalRef = "refs/refretry/original/"

// RegenerateError says that the --regenerate command could not make the push's
// commit again on the remote's tip.
type RegenerateError struct {
	Command string
	Onto    string // the remote tip the work tree was reset to
	Orig    string // the job's own commit, kept at OriginalRef
	Kept    string // the ref that keeps Orig
	Status  int    // the command's exit code; -1 when it did not run
	Output  string // what the command (or the step that failed) printed
	Step    string // the step that failed, when it was not the command
}

func (e *RegenerateError) Error() string {
	what := e.Step
	if what == "" {
		what = fmt.Sprintf("the --regenerate command exited %d", e.Status)
	}
	msg := fmt.Sprintf("%s on the remote tip %s", what, replay.Short(e.Onto))
	if e.Kept != "" {
		msg += fmt.Sprintf("; the job's own commit %s is kept at %s", replay.Short(e.Orig), e.Kept)
	}
	if out := strings.TrimSpace(e.Output); out != "" {
		msg += ":\n" + out
	}
	return msg
}

// regenerate makes the push's commit again on the remote's tip onto: it keeps the
// job's commit src at OriginalRef, resets the checked-out commit (the branch it is on,
// or a detached HEAD) and the work tree to onto, runs the Regenerate command there,
// and commits what the command changed (tracked files, and files it created that are
// not ignored) with src's author and message. done is true, with a note, when the
// command changed nothing: the remote already holds the job's result.
func (p *Runner) regenerate(ctx context.Context, a *engine.Attempt, args *Args, s RefStatus, src, onto string) (done bool, err error) {
	fail := func(reason string, out []byte) error {
		return regenerateFailure(&RegenerateError{Command: p.Regenerate, Onto: onto, Orig: src, Kept: p.kept(s), Status: -1, Step: reason, Output: string(out)})
	}
	// The command rewrites the work tree, so what is pushed must be what is checked
	// out: HEAD, the checked-out branch, or that commit by its name.
	branch, _ := p.output(ctx, p.Env, "symbolic-ref", "-q", "HEAD")
	full := p.fullRef(ctx, s.From)
	byName := s.From != "HEAD" && full == ""
	if p.repo().RevParse(ctx, "HEAD") != src || (s.From != "HEAD" && full != branch && !byName) {
		return false, fail("--regenerate: "+shortRef(s.From)+" is not the checked-out commit, whose work tree the command would rewrite", nil)
	}
	if dirty, _ := p.output(ctx, p.Env, "status", "--porcelain", "--untracked-files=no"); dirty != "" {
		return false, fail("--regenerate: the work tree has uncommitted changes, which resetting it would lose", []byte(dirty))
	}
	kept := p.kept(s)
	if p.repo().RevParse(ctx, kept) == "" {
		if out, err := p.command(ctx, p.Env, "update-ref", kept, src).CombinedOutput(); err != nil {
			return false, fail("--regenerate: keeping the job's commit at "+kept+" failed", out)
		}
	}
	if out, err := p.command(ctx, p.Env, "reset", "-q", "--hard", onto).CombinedOutput(); err != nil {
		return false, fail("--regenerate: resetting the work tree to the remote tip failed", out)
	}
	before := p.untracked(ctx)
	top, err := p.output(ctx, p.Env, "rev-parse", "--show-toplevel")
	if err != nil {
		return false, fail("--regenerate: no work tree", nil)
	}
	cmd := exec.CommandContext(ctx, "sh", "-c", p.Regenerate)
	cmd.Dir, cmd.Env = top, p.Env
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	var out gitexec.Capped
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		code := -1
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		return false, regenerateFailure(&RegenerateError{Command: p.Regenerate, Onto: onto, Orig: src, Kept: kept, Status: code, Output: out.String()})
	}
	var created []string
	for _, f := range p.untracked(ctx) {
		if !slices.Contains(before, f) {
			created = append(created, f)
		}
	}
	stage := p.command(ctx, p.Env, "add", "-u")
	if b, err := stage.CombinedOutput(); err != nil {
		return false, fail("--regenerate: staging the command's changes failed", b)
	}
	if len(created) > 0 {
		add := p.command(ctx, p.Env, append([]string{"add", "--"}, created...)...)
		add.Dir = top
		if b, err := add.CombinedOutput(); err != nil {
			return false, fail("--regenerate: staging the command's new files failed", b)
		}
	}
	tree, err := p.output(ctx, p.Env, "write-tree")
	if err != nil {
		return false, fail("--regenerate: writing the tree failed", nil)
	}
	if tree == p.repo().RevParse(ctx, onto+"^{tree}") {
		a.Note("regenerate", fmt.Sprintf("--regenerate: the command changed nothing on the remote tip %s: the remote already holds this job's result; nothing to push (the job's commit %s is kept at %s)",
			replay.Short(onto), replay.Short(src), kept))
		return true, nil
	}
	info, err := p.repo().ReadCommit(ctx, src)
	if err != nil {
		return false, fail("--regenerate: "+err.Error(), nil)
	}
	commit, err := p.repo().CommitTree(ctx, info, tree, onto, false)
	if err != nil {
		return false, fail("--regenerate: "+err.Error(), nil)
	}
	if b, err := p.command(ctx, p.Env, "update-ref", "-m", "refretry push --regenerate", "HEAD", commit, onto).CombinedOutput(); err != nil {
		return false, fail("--regenerate: moving HEAD to the new commit failed", b)
	}
	if byName && !args.replaceSource(s, commit) {
		return false, fail("--regenerate: no refspec among the arguments names "+s.From+", so the new commit cannot be pushed in its place", nil)
	}
	a.Note("regenerate", fmt.Sprintf("regenerated %s on the remote tip %s as %s (the job's commit %s is kept at %s)",
		shortRef(s.From), replay.Short(onto), replay.Short(commit), replay.Short(src), kept))
	return false, nil
}

// kept is the ref that keeps the job's own commit for a push to s.To.
func (p *Runner) kept(s RefStatus) string { return OriginalRef + s.To }

// untracked lists the files git does not track and does not ignore, relative to the
// top of the work tree.
func (p *Runner) untracked(ctx context.Context) []string {
	out, err := p.command(ctx, p.Env, "ls-files", "-z", "--others", "--exclude-standard", "--full-name", ":/").Output()
	if err != nil {
		return nil
	}
	var files []string
	for _, f := range strings.Split(string(out), "\x00") {
		if f != "" {
			files = append(files, f)
		}
	}
	return files
}

// regenerateFailure is a failed regeneration as the run's failure: exit 1, with the
// command's words as refretry's last line.
func regenerateFailure(re *RegenerateError) *failure.Error {
	return &failure.Error{Command: "push", Class: failure.Regenerate, ExitCode: 1, Message: re.Error(), Advice: re.Error(), Cause: re}
}
