package push

import (
	"context"
	"errors"
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
// The new commit is signed as repo signs (replay.Signing), and always when src was;
// when it cannot be, that is found before anything changes.
func (p *Runner) regenerate(ctx context.Context, a *engine.Attempt, repo replay.Repo, args *Args, s RefStatus, src, onto string) (done bool, err error) {
	g := &regeneration{p: p, repo: repo, s: s, src: src, onto: onto, kept: p.kept(s)}
	if err := g.check(ctx); err != nil {
		return false, err
	}
	if err := g.checkSigning(ctx); err != nil {
		return false, err
	}
	if err := g.reset(ctx); err != nil {
		return false, err
	}
	created, err := g.run(ctx)
	if err != nil {
		return false, err
	}
	tree, err := g.stage(ctx, created)
	if err != nil {
		return false, err
	}
	if tree == p.repo().RevParse(ctx, onto+"^{tree}") {
		a.Note("regenerate", fmt.Sprintf("--regenerate: the command changed nothing on the remote tip %s: the remote already holds this job's result; nothing to push (the job's commit %s is kept at %s)",
			replay.Short(onto), replay.Short(src), g.kept))
		return true, nil
	}
	commit, err := g.commit(ctx, tree)
	if err != nil {
		return false, err
	}
	if g.byName && !args.replaceSource(s, commit) {
		return false, g.fail("--regenerate: no refspec among the arguments names "+s.From+", so the new commit cannot be pushed in its place", nil)
	}
	a.Note("regenerate", fmt.Sprintf("regenerated %s on the remote tip %s as %s (the job's commit %s is kept at %s)",
		shortRef(s.From), replay.Short(onto), replay.Short(commit), replay.Short(src), g.kept))
	return false, nil
}

// regeneration is one --regenerate of the push of s: the job's commit src made again
// on the remote tip onto.
type regeneration struct {
	p         *Runner
	repo      replay.Repo   // where the new commit is written, signing as it signs
	info      replay.Commit // src, as read by checkSigning
	s         RefStatus
	src, onto string
	kept      string // the ref that keeps src
	byName    bool   // s.From names the checked-out commit, but is neither HEAD nor its branch
	top       string // the top of the work tree, once run has found it
}

// fail is a step of the regeneration that failed, with what it printed.
func (g *regeneration) fail(reason string, out []byte) error {
	return regenerateFailure(&RegenerateError{Command: g.p.Regenerate, Onto: g.onto, Orig: g.src, Kept: g.kept, Status: -1, Step: reason, Output: string(out)})
}

// check makes sure the work tree may be rewritten: the command rewrites it, so what is
// pushed must be what is checked out (HEAD, the checked-out branch, or that commit by
// its name), and nothing uncommitted may be lost to the reset.
func (g *regeneration) check(ctx context.Context) error {
	p, from := g.p, g.s.From
	branch, _ := p.output(ctx, p.Env, "symbolic-ref", "-q", "HEAD")
	full := p.repo().FullRef(ctx, from)
	g.byName = from != "HEAD" && full == ""
	if p.repo().RevParse(ctx, "HEAD") != g.src || (from != "HEAD" && full != branch && !g.byName) {
		return g.fail("--regenerate: "+shortRef(from)+" is not the checked-out commit, whose work tree the command would rewrite", nil)
	}
	if dirty, _ := p.output(ctx, p.Env, "status", "--porcelain", "--untracked-files=no"); dirty != "" {
		return g.fail("--regenerate: the work tree has uncommitted changes, which resetting it would lose", []byte(dirty))
	}
	return nil
}

// checkSigning reads the job's commit and, when the new commit must be signed (the
// repository signs its commits, or the job's commit carries a signature), makes sure
// it can be: a regeneration that could not sign its commit would have reset the work
// tree for nothing.
func (g *regeneration) checkSigning(ctx context.Context) error {
	info, err := g.repo.ReadCommit(ctx, g.src)
	if err != nil {
		return g.fail("--regenerate: "+err.Error(), nil)
	}
	g.info = info
	if !g.repo.Sign.Always && info.Signature == "" {
		return nil
	}
	err = g.repo.CheckSigning(ctx)
	var se *replay.SignError
	if errors.As(err, &se) {
		se.Commit, se.Configured, se.Signature = g.src, g.repo.Sign.Always, info.Signature
		return se.Failure(nothingPushed(g.s.From, g.src))
	}
	return err
}

// reset keeps the job's commit at its OriginalRef, unless a regeneration before this
// one did, and resets the checked-out commit and the work tree to the remote tip.
func (g *regeneration) reset(ctx context.Context) error {
	p := g.p
	if p.repo().RevParse(ctx, g.kept) == "" {
		if out, err := p.command(ctx, p.Env, "update-ref", g.kept, g.src).CombinedOutput(); err != nil {
			return g.fail("--regenerate: keeping the job's commit at "+g.kept+" failed", out)
		}
	}
	if out, err := p.command(ctx, p.Env, "reset", "-q", "--hard", g.onto).CombinedOutput(); err != nil {
		return g.fail("--regenerate: resetting the work tree to the remote tip failed", out)
	}
	return nil
}

// run runs the Regenerate command at the top of the work tree and returns the files
// it created that git neither tracks nor ignores.
func (g *regeneration) run(ctx context.Context) (created []string, err error) {
	p := g.p
	before := p.untracked(ctx)
	if g.top, err = p.output(ctx, p.Env, "rev-parse", "--show-toplevel"); err != nil {
		return nil, g.fail("--regenerate: no work tree", nil)
	}
	cmd := exec.CommandContext(ctx, "sh", "-c", p.Regenerate)
	cmd.Dir, cmd.Env = g.top, p.Env
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	var out gitexec.Capped
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		code := -1
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		return nil, regenerateFailure(&RegenerateError{Command: p.Regenerate, Onto: g.onto, Orig: g.src, Kept: g.kept, Status: code, Output: out.String()})
	}
	for _, f := range p.untracked(ctx) {
		if !slices.Contains(before, f) {
			created = append(created, f)
		}
	}
	return created, nil
}

// stage stages what the command changed (tracked files, and the files it created) and
// returns the tree of the index.
func (g *regeneration) stage(ctx context.Context, created []string) (tree string, err error) {
	p := g.p
	if b, err := p.command(ctx, p.Env, "add", "-u").CombinedOutput(); err != nil {
		return "", g.fail("--regenerate: staging the command's changes failed", b)
	}
	if len(created) > 0 {
		add := p.command(ctx, p.Env, append([]string{"add", "--"}, created...)...)
		add.Dir = g.top
		if b, err := add.CombinedOutput(); err != nil {
			return "", g.fail("--regenerate: staging the command's new files failed", b)
		}
	}
	if tree, err = p.output(ctx, p.Env, "write-tree"); err != nil {
		return "", g.fail("--regenerate: writing the tree failed", nil)
	}
	return tree, nil
}

// commit commits tree on the remote tip with the job's author and message, and moves
// HEAD (and the branch it is on) to it.
func (g *regeneration) commit(ctx context.Context, tree string) (string, error) {
	p := g.p
	commit, err := g.repo.CommitTree(ctx, g.info, tree, g.onto, false)
	var se *replay.SignError
	switch {
	case errors.As(err, &se):
		// checkSigning signed before the reset, so the key went away since: put the
		// job's commit back, as if nothing had been tried.
		_ = p.command(ctx, p.Env, "reset", "-q", "--hard", g.src).Run()
		return "", se.Failure(nothingPushed(g.s.From, g.src))
	case err != nil:
		return "", g.fail("--regenerate: "+err.Error(), nil)
	}
	if b, err := p.command(ctx, p.Env, "update-ref", "-m", "refretry push --regenerate", "HEAD", commit, g.onto).CombinedOutput(); err != nil {
		return "", g.fail("--regenerate: moving HEAD to the new commit failed", b)
	}
	return commit, nil
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
