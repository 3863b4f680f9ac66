package replay

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/refretry/refretry/internal/gitexec"
)

// Chain replays many commits one after another onto a tip, as a gatherer does, with
// few git processes whatever their number: one `git merge-tree --stdin` merges every
// commit's changes into the tree so far (each merge's ours is the tree the last one
// wrote), and the commits are written together at the end with one `git hash-object`,
// their ids reckoned here so that each can name the last as its parent. A repository
// that signs its commits writes each with commit-tree instead (the signature is the
// signing program's), and a git whose merge-tree cannot merge trees (before 2.45, say)
// merges each with a merge-tree of its own: the same results, with more processes.
type Chain struct {
	r       Repo
	tip     string // the chain's tip commit so far
	tree    string // its tree
	merger  *merger
	pending []pendingCommit // commits reckoned and not yet written
	err     error
}

// pendingCommit is a commit object reckoned here, written by Finish: info (its
// trailer added) as a commit of tree.
type pendingCommit struct {
	id   string
	body []byte
	info Commit
	tree string
}

// Chain starts a chain on the commit tip, whose tree is tree.
func (r Repo) Chain(ctx context.Context, tip, tree string) *Chain {
	c := &Chain{r: r, tip: tip, tree: tree}
	c.merger = r.startMerger(ctx)
	return c
}

// Tip is the chain's tip so far (written by Finish).
func (c *Chain) Tip() string { return c.tip }

// Tree is the tree of the chain's tip.
func (c *Chain) Tree() string { return c.tree }

// Merge merges the changes of commit against base into the chain's tree and returns
// the resulting tree, or a *ConflictError; the chain does not move until Add.
func (c *Chain) Merge(ctx context.Context, commit, base string) (string, error) {
	if c.merger != nil {
		tree, paths, err := c.merger.merge(base, c.tree, commit)
		switch {
		case err == nil && paths != nil:
			return "", &ConflictError{Commit: commit, Paths: paths}
		case err == nil:
			return tree, nil
		}
		c.merger.close() // this git cannot merge trees: one merge-tree a commit from now on
		c.merger = nil
	}
	if err := c.flush(ctx); err != nil { // that merge-tree reads the tip, a commit
		return "", err
	}
	return c.r.mergeTree(ctx, c.tip, commit, base, true)
}

// Add puts tree on the chain's tip as a commit with info's author, author date and
// message, keeping what keep says, as Write does.
func (c *Chain) Add(ctx context.Context, info Commit, tree string, keep Keep) error {
	if c.err != nil {
		return c.err
	}
	sign := Signing{}
	if c.r.Sign != nil {
		sign = *c.r.Sign
	}
	if sign.signs(info.Signature) || !keep.Committer {
		// Signed (the program signs what git writes), or dated now: git writes it.
		if err := c.flush(ctx); err != nil {
			return err
		}
		next, err := c.r.Write(ctx, info, tree, c.tip, keep)
		if err != nil {
			return err
		}
		c.tip, c.tree = next, tree
		return nil
	}
	if keep.Trailer != "" {
		info.Message = addTrailer(info.Message, keep.Trailer)
	}
	body := commitBody(info, tree, c.tip)
	id := objectID("commit", body, len(tree))
	c.pending = append(c.pending, pendingCommit{id: id, body: body, info: info, tree: tree})
	c.tip, c.tree = id, tree
	return nil
}

// Finish writes the commits reckoned so far and ends the chain; it returns the tip.
func (c *Chain) Finish(ctx context.Context) (string, error) {
	if c.merger != nil {
		c.merger.close()
		c.merger = nil
	}
	if err := c.flush(ctx); err != nil {
		return "", err
	}
	return c.tip, nil
}

// flush writes the pending commits with one git hash-object, and checks that git named
// each as reckoned; when git does not (or refuses one), it writes them again one by
// one with commit-tree, as Add would have.
func (c *Chain) flush(ctx context.Context) error {
	if len(c.pending) == 0 {
		return nil
	}
	if c.hashObjects(ctx) == nil {
		c.pending = nil
		return nil
	}
	pending := c.pending
	c.pending, c.tip = nil, pending[0].parent()
	for _, p := range pending {
		next, err := c.r.CommitTree(ctx, p.info, p.tree, c.tip, true)
		if err != nil {
			return err
		}
		c.tip = next
	}
	return nil
}

// parent is the parent the commit's text names ("" for a root commit).
func (p pendingCommit) parent() string {
	for _, line := range strings.Split(string(p.body), "\n") {
		if rest, ok := strings.CutPrefix(line, "parent "); ok {
			return rest
		}
		if line == "" {
			break
		}
	}
	return ""
}

// hashObjects writes the pending commits with one git hash-object, and checks that git
// named each as reckoned.
func (c *Chain) hashObjects(ctx context.Context) error {
	dir, err := os.MkdirTemp("", "refretry-commits")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	var paths strings.Builder
	for i, p := range c.pending {
		name := filepath.Join(dir, fmt.Sprint(i))
		if err := os.WriteFile(name, p.body, 0o600); err != nil {
			return err
		}
		paths.WriteString(name + "\n")
	}
	cmd := c.r.Command(ctx, c.r.Env, "hash-object", "-t", "commit", "-w", "--stdin-paths")
	cmd.Stdin = strings.NewReader(paths.String())
	out, err := gitexec.Capture(cmd)
	if err != nil {
		return err
	}
	ids := strings.Fields(string(out.Stdout))
	if out.Code != 0 || len(ids) != len(c.pending) {
		return fmt.Errorf("git hash-object: exit %d: %s", out.Code, strings.TrimSpace(string(out.Stderr)))
	}
	for i, p := range c.pending {
		if ids[i] != p.id {
			return fmt.Errorf("git wrote commit %s where %s was reckoned", ids[i], p.id)
		}
	}
	return nil
}

// commitBody is the text of a commit of tree on parent with c's author, committer
// (with their dates), encoding and message, as git commit-tree writes it.
func commitBody(c Commit, tree, parent string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "tree %s\n", tree)
	if parent != "" {
		fmt.Fprintf(&b, "parent %s\n", parent)
	}
	fmt.Fprintf(&b, "author %s <%s> %s\n", c.Author.Name, c.Author.Email, c.Author.Date)
	fmt.Fprintf(&b, "committer %s <%s> %s\n", c.Committer.Name, c.Committer.Email, c.Committer.Date)
	if c.Encoding != "" {
		fmt.Fprintf(&b, "encoding %s\n", c.Encoding)
	}
	b.WriteString("\n")
	b.Write(c.Message)
	return b.Bytes()
}

// objectID is the name git gives an object of kind with body, in the object format
// whose names are hexLen hex digits long (40: SHA-1, 64: SHA-256).
func objectID(kind string, body []byte, hexLen int) string {
	var h hash.Hash = sha1.New()
	if hexLen == 64 {
		h = sha256.New()
	}
	fmt.Fprintf(h, "%s %d\x00", kind, len(body))
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil))
}

// merger is a running `git merge-tree --stdin`, which merges one line at a time.
type merger struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

// startMerger starts a merge-tree that reads merges from its input; nil when it
// cannot start.
func (r Repo) startMerger(ctx context.Context) *merger {
	cmd := r.Command(ctx, r.Env, "merge-tree", "--stdin", "--write-tree", "--name-only", "--no-messages")
	in, err1 := cmd.StdinPipe()
	out, err2 := cmd.StdoutPipe()
	if err1 != nil || err2 != nil || cmd.Start() != nil {
		return nil
	}
	return &merger{cmd: cmd, in: in, out: bufio.NewReader(out)}
}

// errMerger is a merge-tree that ended before it answered: it could not merge what it
// was given (trees, on a git that merges only commits).
var errMerger = errors.New("git merge-tree --stdin ended")

// merge merges the changes of theirs against base into ours (a tree) and returns the
// tree, and the conflicting paths (nil when it merged cleanly).
func (m *merger) merge(base, ours, theirs string) (tree string, conflicts []string, err error) {
	if _, err := fmt.Fprintf(m.in, "%s -- %s %s\n", base, ours, theirs); err != nil {
		return "", nil, errMerger
	}
	// "<status>\0<tree>\0" then each conflicting path and "\0", ended by an empty field.
	var fields []string
	for {
		f, err := m.out.ReadString(0)
		if err != nil {
			return "", nil, errMerger
		}
		f = strings.TrimSuffix(f, "\x00")
		if f == "" && len(fields) >= 2 {
			break
		}
		fields = append(fields, f)
	}
	if fields[0] == "1" {
		return fields[1], nil, nil
	}
	return fields[1], append([]string{}, fields[2:]...), nil
}

// close ends the merge-tree.
func (m *merger) close() {
	m.in.Close()
	_ = m.cmd.Wait()
}
