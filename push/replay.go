package push

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/refretry/refretry/internal/gitexec"
)

// errReplayUnsupported is why a replay was not tried: the commits cannot be replayed
// without a work tree by this git, or are not a plain line of commits.
var errReplayUnsupported = errors.New("cannot replay")

// replayConflict is a replay that stopped on a conflict: which commit, and the paths.
type replayConflict struct {
	commit string
	paths  []string
}

func (c *replayConflict) Error() string {
	return fmt.Sprintf("%s conflicts in %s", short(c.commit), strings.Join(c.paths, ", "))
}

// replay copies the commits of src that onto does not have, in order, onto onto,
// without a work tree or an index: each commit's changes are merged with `git
// merge-tree --write-tree` (its parent as the merge base, the repository's merge
// attributes honoured), and committed with `git commit-tree`, keeping its author, its
// author date and its message. It returns the new tip (onto itself when onto already
// has every commit of src). Nothing in the repository changes but new objects.
func (p *Runner) replay(ctx context.Context, env []string, src, onto string) (string, error) {
	list, err := p.output(ctx, env, "rev-list", "--reverse", "--parents", src, "^"+onto)
	if err != nil {
		return "", fmt.Errorf("listing the commits to replay: %w", err)
	}
	if list == "" {
		return onto, nil
	}
	var commits []string
	for _, line := range strings.Split(list, "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			// A merge commit (or a root): a line of commits is all replay knows.
			return "", fmt.Errorf("%w: %s is not a commit with one parent", errReplayUnsupported, short(f[0]))
		}
		commits = append(commits, f[0])
	}
	withBase := p.gitAtLeast(ctx, env, 2, 40) // merge-tree --merge-base
	tip := onto
	for _, c := range commits {
		parent := c + "^"
		if !withBase {
			// Before 2.40 merge-tree finds the merge base itself: right only when it is
			// the commit's own parent, as for the first commit of a job's push.
			if mb, err := p.output(ctx, env, "merge-base", tip, c); err != nil || mb != p.revParse(ctx, env, parent) {
				return "", fmt.Errorf("%w: git %s cannot replay %s onto %s (merge-tree --merge-base needs git 2.40)",
					errReplayUnsupported, p.gitVersion(ctx, env), short(c), short(tip))
			}
		}
		tree, err := p.mergeTree(ctx, env, tip, c, parent, withBase)
		if err != nil {
			return "", err
		}
		if tip, err = p.recommit(ctx, env, c, tree, tip); err != nil {
			return "", err
		}
	}
	return tip, nil
}

// mergeTree merges the changes of commit (against base) into tip and returns the
// resulting tree, or a *replayConflict.
func (p *Runner) mergeTree(ctx context.Context, env []string, tip, commit, base string, withBase bool) (string, error) {
	args := []string{"merge-tree", "--write-tree", "--name-only", "--no-messages"}
	if withBase {
		args = append(args, "--merge-base="+base)
	}
	cmd := p.command(ctx, env, append(args, tip, commit)...)
	c, err := gitexec.Capture(cmd)
	if err != nil {
		return "", err
	}
	lines := strings.Split(strings.TrimRight(string(c.Stdout), "\n"), "\n")
	switch c.Code {
	case 0:
		return lines[0], nil
	case 1:
		conflict := &replayConflict{commit: commit}
		for _, l := range lines[1:] {
			if l != "" {
				conflict.paths = append(conflict.paths, l)
			}
		}
		return "", conflict
	}
	return "", fmt.Errorf("git merge-tree: exit %d: %s", c.Code, strings.TrimSpace(string(c.Stderr)))
}

// commitInfo is what a commit says of itself.
type commitInfo struct {
	author, committer ident
	message           []byte
}

// ident is an author or committer line: a name, an email and a date ("<seconds> <zone>").
type ident struct{ name, email, date string }

// readCommit reads commit's author, committer and message.
func (p *Runner) readCommit(ctx context.Context, env []string, commit string) (commitInfo, error) {
	out, err := p.command(ctx, env, "cat-file", "commit", commit).Output()
	if err != nil {
		return commitInfo{}, fmt.Errorf("reading commit %s: %w", short(commit), err)
	}
	header, message, _ := bytes.Cut(out, []byte("\n\n"))
	var info commitInfo
	info.message = message
	for _, line := range strings.Split(string(header), "\n") {
		if v, ok := strings.CutPrefix(line, "author "); ok {
			info.author = parseIdent(v)
		} else if v, ok := strings.CutPrefix(line, "committer "); ok {
			info.committer = parseIdent(v)
		}
	}
	if info.author.email == "" && info.author.name == "" {
		return commitInfo{}, fmt.Errorf("commit %s has no author", short(commit))
	}
	return info, nil
}

// parseIdent reads "Name <email> 1700000000 +0000".
func parseIdent(s string) ident {
	lt, gt := strings.IndexByte(s, '<'), strings.LastIndexByte(s, '>')
	if lt < 0 || gt < lt {
		return ident{}
	}
	return ident{
		name:  strings.TrimSpace(s[:lt]),
		email: s[lt+1 : gt],
		date:  strings.TrimSpace(s[gt+1:]),
	}
}

// identEnv is the environment that makes git write id as the author (role
// "AUTHOR") or committer ("COMMITTER"); withDate false leaves the date to git.
func identEnv(env []string, role string, id ident, withDate bool) []string {
	env = append(env[:len(env):len(env)], "GIT_"+role+"_NAME="+id.name, "GIT_"+role+"_EMAIL="+id.email)
	if withDate && id.date != "" {
		env = append(env, "GIT_"+role+"_DATE=@"+id.date)
	}
	return env
}

// recommit writes tree as a new commit on parent with commit's author, author date and
// message; the committer is the caller's identity, or commit's when the caller has none
// configured (a CI job that made commit with an identity set only for that step).
func (p *Runner) recommit(ctx context.Context, env []string, commit, tree, parent string) (string, error) {
	info, err := p.readCommit(ctx, env, commit)
	if err != nil {
		return "", err
	}
	return p.commitTree(ctx, env, info, tree, parent)
}

// commitTree writes tree as a commit on parent with info's author and message.
func (p *Runner) commitTree(ctx context.Context, env []string, info commitInfo, tree, parent string) (string, error) {
	cenv := identEnv(env, "AUTHOR", info.author, true)
	if _, err := p.output(ctx, env, "var", "GIT_COMMITTER_IDENT"); err != nil {
		cenv = identEnv(cenv, "COMMITTER", info.committer, false)
	}
	cmd := p.command(ctx, cenv, "commit-tree", tree, "-p", parent)
	cmd.Stdin = bytes.NewReader(info.message)
	c, err := gitexec.Capture(cmd)
	if err != nil {
		return "", err
	}
	if c.Code != 0 {
		return "", fmt.Errorf("git commit-tree: exit %d: %s", c.Code, strings.TrimSpace(string(c.Stderr)))
	}
	return strings.TrimSpace(string(c.Stdout)), nil
}

// revParse is the object name rev resolves to, "" when it resolves to none.
func (p *Runner) revParse(ctx context.Context, env []string, rev string) string {
	out, err := p.output(ctx, env, "rev-parse", "--verify", "-q", rev)
	if err != nil {
		return ""
	}
	return out
}

// gitVersion is the version of the git the Runner runs ("2.55.0"; "" if unknown).
func (p *Runner) gitVersion(ctx context.Context, env []string) string {
	return gitexec.Version(ctx, p.git(), env)
}

// gitAtLeast reports whether the git the Runner runs is at least major.minor.
func (p *Runner) gitAtLeast(ctx context.Context, env []string, major, minor int) bool {
	return gitexec.AtLeast(p.gitVersion(ctx, env), major, minor)
}
