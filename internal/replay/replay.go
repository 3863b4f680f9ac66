// Package replay puts commits on another commit without a work tree or an index: each
// commit's changes are merged with `git merge-tree --write-tree` (its parent as the
// merge base; the repository's merge attributes, such as merge=union, apply) and
// written with `git commit-tree`, keeping the commit's author, author date and
// message. Nothing in the repository changes but new objects: no ref, no index, no
// work tree. `refretry push --rebase` replays a job's commits onto a remote's new tip
// with it, and --gather replays every staged job's commit. A commit written here is
// signed as `git commit` would sign it in the repository, and always when the commit
// it replays was signed (sign.go).
package replay

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"

	"github.com/refretry/refretry/internal/gitexec"
)

// ErrUnsupported is why a replay was not tried: the commits are not a line of commits
// with one parent each, or this git cannot replay them (merge-tree --merge-base needs
// 2.40).
var ErrUnsupported = errors.New("cannot replay")

// ConflictError is a replay that stopped on a conflict: which commit, and the paths.
type ConflictError struct {
	Commit string
	Paths  []string
}

func (c *ConflictError) Error() string {
	return fmt.Sprintf("%s conflicts in %s", Short(c.Commit), strings.Join(c.Paths, ", "))
}

// Repo is the repository replays run in: git, the -C directories and the environment.
type Repo struct {
	Git  string
	Dirs []string
	// GlobalArgs are git's global options given after the -C directories (`-c k=v`).
	GlobalArgs []string
	Env        []string
	// Sign is whether every commit written is signed (see Signing); nil means read
	// from git config at each commit written. A caller that writes many reads it once
	// (ReadSigning).
	Sign *Signing
	// Note, if set, is told when a commit is signed only because its original was
	// (commit.gpgSign is not true).
	Note func(msg string)
}

// Keep says what of a replayed commit's identity is kept besides its author, author
// date and message.
type Keep struct {
	// Committer keeps its committer and commit date (a commit landed for another job
	// stays that job's). Otherwise the committer is the caller's identity, or the
	// commit's own when the caller has none configured.
	Committer bool
	// Trailer, when not empty, is a "Key: value" line added to the message's trailers.
	Trailer string
}

// Line copies the commits of src that onto does not have, in order, onto onto, and
// returns the new tip (onto itself when onto already has every commit of src).
func (r Repo) Line(ctx context.Context, src, onto string) (string, error) {
	list, err := r.Output(ctx, "rev-list", "--reverse", "--parents", src, "^"+onto)
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
			return "", fmt.Errorf("%w: %s is not a commit with one parent", ErrUnsupported, Short(f[0]))
		}
		commits = append(commits, f[0])
	}
	withBase := r.AtLeast(ctx, 2, 40)
	tip := onto
	for _, c := range commits {
		if !withBase {
			// Before 2.40 merge-tree finds the merge base itself: right only when it is
			// the commit's own parent, as for the first commit of a job's push.
			if mb, err := r.Output(ctx, "merge-base", tip, c); err != nil || mb != r.RevParse(ctx, c+"^") {
				return "", fmt.Errorf("%w: git %s cannot replay %s onto %s (merge-tree --merge-base needs git 2.40)",
					ErrUnsupported, gitexec.Version(ctx, r.Git, r.Env), Short(c), Short(tip))
			}
		}
		var err error
		if tip, err = r.pick(ctx, c, c+"^", tip, withBase, Keep{}); err != nil {
			return "", err
		}
	}
	return tip, nil
}

// Pick puts the changes of commit against base onto onto as one new commit, keeping
// what keep says, and returns it. It needs git 2.40 (merge-tree --merge-base).
func (r Repo) Pick(ctx context.Context, commit, base, onto string, keep Keep) (string, error) {
	return r.pick(ctx, commit, base, onto, true, keep)
}

func (r Repo) pick(ctx context.Context, commit, base, onto string, withBase bool, keep Keep) (string, error) {
	tree, err := r.mergeTree(ctx, onto, commit, base, withBase)
	if err != nil {
		return "", err
	}
	info, err := r.ReadCommit(ctx, commit)
	if err != nil {
		return "", err
	}
	return r.Write(ctx, info, tree, onto, keep)
}

// Write writes tree as a commit on onto with info's author, author date and message,
// keeping what keep says, and returns it.
func (r Repo) Write(ctx context.Context, info Commit, tree, onto string, keep Keep) (string, error) {
	if keep.Trailer != "" {
		info.Message = addTrailer(info.Message, keep.Trailer)
	}
	return r.CommitTree(ctx, info, tree, onto, keep.Committer)
}

// MergeTree merges the changes of commit (against base, its parent) into tip and
// returns the resulting tree, or a *ConflictError. It needs git 2.40.
func (r Repo) MergeTree(ctx context.Context, tip, commit, base string) (string, error) {
	return r.mergeTree(ctx, tip, commit, base, true)
}

func (r Repo) mergeTree(ctx context.Context, tip, commit, base string, withBase bool) (string, error) {
	args := []string{"merge-tree", "--write-tree", "--name-only", "--no-messages"}
	if withBase {
		args = append(args, "--merge-base="+base)
	}
	c, err := gitexec.Capture(r.Command(ctx, r.Env, append(args, tip, commit)...))
	if err != nil {
		return "", err
	}
	lines := strings.Split(strings.TrimRight(string(c.Stdout), "\n"), "\n")
	switch c.Code {
	case 0:
		return lines[0], nil
	case 1:
		conflict := &ConflictError{Commit: commit}
		for _, l := range lines[1:] {
			if l != "" {
				conflict.Paths = append(conflict.Paths, l)
			}
		}
		return "", conflict
	}
	return "", fmt.Errorf("git merge-tree: exit %d: %s", c.Code, strings.TrimSpace(string(c.Stderr)))
}

// Commit is what a commit says of itself.
type Commit struct {
	Author, Committer Ident
	Message           []byte
	Tree              string   // its tree (as read; not used by CommitTree)
	Parents           []string // its parents (as read; not used by CommitTree)
	// ID is the name it was read by ("" for a commit of refretry's own), and
	// Signature the kind of signature it carries: openpgp, ssh or x509, "" for none.
	// CommitTree signs the commit it writes from one that carries a signature.
	ID, Signature string
	// Encoding is its encoding header ("" for none: UTF-8), which a Chain keeps.
	Encoding string
}

// Ident is an author or committer line: a name, an email and a date ("<seconds> <zone>").
type Ident struct{ Name, Email, Date string }

// ReadCommit reads commit's author, committer and message.
func (r Repo) ReadCommit(ctx context.Context, commit string) (Commit, error) {
	out, err := r.Command(ctx, r.Env, "cat-file", "commit", commit).Output()
	if err != nil {
		return Commit{}, fmt.Errorf("reading commit %s: %w", Short(commit), err)
	}
	return parseCommit(commit, out)
}

// ReadCommits reads every commit of revs (object names, or expressions such as
// "<oid>^") with one git, in order, each Commit's ID its object name. A rev that
// names no commit here gives a zero Commit (its Tree is empty).
func (r Repo) ReadCommits(ctx context.Context, revs []string) ([]Commit, error) {
	cmd := r.Command(ctx, r.Env, "cat-file", "--batch")
	cmd.Stdin = strings.NewReader(strings.Join(revs, "\n") + "\n")
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("reading %d commits: %w", len(revs), err)
	}
	commits := make([]Commit, len(revs))
	for i, rev := range revs {
		// Each object is "<oid> <type> <size>\n<content>\n"; one that is not here,
		// "<rev> missing\n" (or "ambiguous").
		header, rest, ok := bytes.Cut(out, []byte("\n"))
		if !ok {
			return nil, fmt.Errorf("reading commit %s: git cat-file ended early", rev)
		}
		out = rest
		f := strings.Fields(string(header))
		if len(f) != 3 {
			continue
		}
		size, err := strconv.Atoi(f[2])
		if err != nil || size+1 > len(rest) {
			return nil, fmt.Errorf("reading commit %s: git cat-file said %q", rev, header)
		}
		out = rest[size+1:]
		if f[1] == "commit" {
			if commits[i], err = parseCommit(f[0], rest[:size]); err != nil {
				return nil, err
			}
		}
	}
	return commits, nil
}

// parseCommit reads a commit object's text.
func parseCommit(name string, text []byte) (Commit, error) {
	header, message, _ := bytes.Cut(text, []byte("\n\n"))
	c := Commit{Message: message, ID: name}
	for _, line := range strings.Split(string(header), "\n") {
		key, v, _ := strings.Cut(line, " ")
		if isSignatureHeader(key) && c.Signature == "" {
			c.Signature = signatureKind(v)
		}
		switch key {
		case "tree":
			c.Tree = v
		case "parent":
			c.Parents = append(c.Parents, v)
		case "author":
			c.Author = parseIdent(v)
		case "committer":
			c.Committer = parseIdent(v)
		case "encoding":
			c.Encoding = v
		}
	}
	if c.Author.Email == "" && c.Author.Name == "" {
		return Commit{}, fmt.Errorf("commit %s has no author", Short(name))
	}
	return c, nil
}

// parseIdent reads "Name <email> 1700000000 +0000".
func parseIdent(s string) Ident {
	lt, gt := strings.IndexByte(s, '<'), strings.LastIndexByte(s, '>')
	if lt < 0 || gt < lt {
		return Ident{}
	}
	return Ident{Name: strings.TrimSpace(s[:lt]), Email: s[lt+1 : gt], Date: strings.TrimSpace(s[gt+1:])}
}

// identEnv is the environment that makes git write id as the author (role "AUTHOR")
// or committer ("COMMITTER"); withDate false leaves the date to git.
func identEnv(env []string, role string, id Ident, withDate bool) []string {
	env = append(env[:len(env):len(env)], "GIT_"+role+"_NAME="+id.Name, "GIT_"+role+"_EMAIL="+id.Email)
	if withDate && id.Date != "" {
		env = append(env, "GIT_"+role+"_DATE=@"+id.Date)
	}
	return env
}

// CommitTree writes tree as a commit on parent ("" for a root commit) with c's
// author, author date and message. The committer is c's with its date when keepCommitter is set; otherwise
// the caller's identity, or c's committer (dated now) when the caller has none
// configured (a CI job that set an identity only for the step that committed).
// The commit is signed when the repository signs its commits (Signing) or c carries a
// signature; when it cannot be, nothing is written and the error is a *SignError.
func (r Repo) CommitTree(ctx context.Context, c Commit, tree, parent string, keepCommitter bool) (string, error) {
	sign, err := r.signing(ctx)
	if err != nil {
		return "", err
	}
	signed := sign.signs(c.Signature)
	env := identEnv(r.Env, "AUTHOR", c.Author, true)
	switch {
	case keepCommitter:
		env = identEnv(env, "COMMITTER", c.Committer, true)
	default:
		if _, err := r.Output(ctx, "var", "GIT_COMMITTER_IDENT"); err != nil {
			env = identEnv(env, "COMMITTER", c.Committer, false)
		}
	}
	args := []string{"commit-tree", tree}
	if parent != "" {
		args = append(args, "-p", parent)
	}
	if signed {
		args = append(args, "-S")
	}
	cmd := r.Command(ctx, env, args...)
	cmd.Stdin = bytes.NewReader(c.Message)
	out, err := gitexec.Capture(cmd)
	switch {
	case err != nil:
		return "", err
	case out.Code == 1 && signed: // the signing failed; anything else exits 128
		return "", r.signFailure(ctx, c, sign.Always, out.Stderr)
	case out.Code != 0:
		return "", fmt.Errorf("git commit-tree: exit %d: %s", out.Code, strings.TrimSpace(string(out.Stderr)))
	}
	oid := strings.TrimSpace(string(out.Stdout))
	if signed && !sign.Always && r.Note != nil {
		r.Note(fmt.Sprintf("signed %s, the replay of %s, with this repository's key: %s carries an %s signature, and commit.gpgSign is not set",
			Short(oid), Short(c.ID), Short(c.ID), c.Signature))
	}
	return oid, nil
}

// addTrailer adds the line "Key: value" to message's trailers: after the last
// paragraph when that is already a block of trailers, else in a paragraph of its own.
func addTrailer(message []byte, trailer string) []byte {
	msg := strings.TrimRight(string(message), "\n")
	if msg == "" {
		return []byte(trailer + "\n")
	}
	paras := strings.Split(msg, "\n\n")
	last := paras[len(paras)-1]
	sep := "\n\n"
	if len(paras) > 1 && isTrailerBlock(last) {
		sep = "\n"
	}
	return []byte(msg + sep + trailer + "\n")
}

// isTrailerBlock reports whether every line of para is "Key: value".
func isTrailerBlock(para string) bool {
	for _, line := range strings.Split(para, "\n") {
		k, _, ok := strings.Cut(line, ": ")
		if !ok || k == "" || strings.ContainsAny(k, " \t") {
			return false
		}
	}
	return true
}

// Command is a git command in the repository with env.
func (r Repo) Command(ctx context.Context, env []string, args ...string) *exec.Cmd {
	if len(r.GlobalArgs) > 0 {
		args = append(append(make([]string, 0, len(r.GlobalArgs)+len(args)), r.GlobalArgs...), args...)
	}
	return gitexec.Command(ctx, r.git(), r.Dirs, env, args...)
}

// Output runs git in the repository and returns its trimmed standard output.
func (r Repo) Output(ctx context.Context, args ...string) (string, error) {
	out, err := r.Command(ctx, r.Env, args...).Output()
	return strings.TrimSpace(string(out)), err
}

// RevParse is the object name rev resolves to, "" when it resolves to none.
func (r Repo) RevParse(ctx context.Context, rev string) string {
	out, err := r.Output(ctx, "rev-parse", "--verify", "-q", rev)
	if err != nil {
		return ""
	}
	return out
}

// AtLeast reports whether the repository's git is major.minor or later.
func (r Repo) AtLeast(ctx context.Context, major, minor int) bool {
	return gitexec.AtLeast(gitexec.Version(ctx, r.git(), r.Env), major, minor)
}

func (r Repo) git() string { return gitexec.Path(r.Git) }

// Short is an object name cut to 12 characters, for messages.
func Short(oid string) string {
	if len(oid) > 12 {
		return oid[:12]
	}
	return oid
}
