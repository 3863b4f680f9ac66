package forgeapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/refretry/refretry/internal/harness/testutil"
	"github.com/refretry/refretry/internal/replay"
)

// zeroOID is the value update-ref takes for "the ref must not exist yet".
const zeroOID = "0000000000000000000000000000000000000000"

// errMoved is a compare-and-swap on a ref lost to another writer: the ref's value is no
// longer the one the update expected.
var errMoved = errors.New("forgeapi: the ref moved")

// repo is the bare repository behind a fake forge, written with the git binary.
type repo struct {
	git string
	dir string
	env []string
}

// ident is a commit's author or committer.
type ident struct {
	Name, Email string
	When        time.Time
}

func (i ident) env(role string) []string {
	return []string{
		"GIT_" + role + "_NAME=" + i.Name,
		"GIT_" + role + "_EMAIL=" + i.Email,
		"GIT_" + role + "_DATE=" + i.When.UTC().Format(time.RFC3339),
	}
}

// run runs git in the repository with stdin and env added, and returns its stdout
// with the final newline removed; a failure's error carries git's stderr.
func (r *repo) run(stdin []byte, env []string, args ...string) (string, error) {
	cmd := exec.Command(r.git, args...)
	cmd.Dir = r.dir
	cmd.Env = append(r.env[:len(r.env):len(r.env)], env...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSuffix(stdout.String(), "\n"), nil
}

// writeBlob stores data as a blob and returns its id.
func (r *repo) writeBlob(data []byte) (string, error) {
	return r.run(data, nil, "hash-object", "-w", "--stdin")
}

// resolve is ref's value, "" when there is no such ref.
func (r *repo) resolve(ref string) (string, error) {
	out, err := r.run(nil, nil, "for-each-ref", "--format=%(refname) %(objectname)", "--", ref)
	if err != nil {
		return "", err
	}
	// for-each-ref matches a prefix too (refs/heads/a lists refs/heads/a/b): take the
	// exact name only.
	for _, line := range strings.Split(out, "\n") {
		if name, oid, ok := strings.Cut(line, " "); ok && name == ref {
			return oid, nil
		}
	}
	return "", nil
}

// objectType is the type of oid ("blob", "tree", "commit", "tag"), "" when the
// repository does not have it.
func (r *repo) objectType(oid string) string {
	if !isOID(oid) {
		return ""
	}
	t, err := r.run(nil, nil, "cat-file", "-t", oid)
	if err != nil {
		return ""
	}
	return t
}

// commitTree writes a commit of tree with parents and message; with signer, signed
// with that key (commit-tree -S), as the forge's own key signs its commits.
func (r *repo) commitTree(tree string, parents []string, message string, author, committer ident, signer *testutil.Signer) (string, error) {
	var args, env []string
	if signer != nil {
		args = append(args, signer.ConfigArgs()...)
		env = append(env, signer.Env()...)
	}
	args = append(args, "commit-tree", tree, "-F", "-")
	if signer != nil {
		args = append(args, "-S")
	}
	for _, p := range parents {
		args = append(args, "-p", p)
	}
	env = append(append(env, author.env("AUTHOR")...), committer.env("COMMITTER")...)
	return r.run([]byte(message), env, args...)
}

// updateRef moves ref from old ("" for any value, zeroOID for "must not exist") to
// new; errMoved when the ref no longer had old.
func (r *repo) updateRef(ref, new, old string) error {
	args := []string{"update-ref", "-m", "forgeapi", ref, new}
	if old != "" {
		args = append(args, old)
	}
	_, err := r.run(nil, nil, args...)
	if err == nil || old == "" {
		return err
	}
	// Whatever git's words, a ref that no longer holds old lost the race.
	now, rerr := r.resolve(ref)
	if rerr == nil && now != old && !(old == zeroOID && now == "") {
		return errMoved
	}
	return err
}

// isAncestor reports whether a is an ancestor of b (or b itself).
func (r *repo) isAncestor(a, b string) (bool, error) {
	cmd := exec.Command(r.git, "merge-base", "--is-ancestor", a, b)
	cmd.Dir, cmd.Env = r.dir, r.env
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return true, nil
	case errors.As(err, &ee) && ee.ExitCode() == 1:
		return false, nil
	}
	return false, fmt.Errorf("git merge-base --is-ancestor %s %s: %w", a, b, err)
}

// commitInfo is what the APIs answer about a commit.
type commitInfo struct {
	OID, Tree         string
	Parents           []string
	Author, Committer ident
	Message           string
	Signed            bool // the commit carries a signature
}

// readCommit reads commit oid, with the module's one reader of commit objects
// (internal/replay).
func (r *repo) readCommit(oid string) (commitInfo, error) {
	c, err := replay.Repo{Git: r.git, Dirs: []string{r.dir}, Env: r.env}.ReadCommit(context.Background(), oid)
	if err != nil {
		return commitInfo{}, err
	}
	return commitInfo{OID: oid, Tree: c.Tree, Parents: c.Parents, Author: identOf(c.Author), Committer: identOf(c.Committer),
		Message: strings.TrimSuffix(string(c.Message), "\n"), Signed: c.Signature != ""}, nil
}

// identOf is replay's identity (its date "<seconds> <zone>") as an ident in UTC.
func identOf(i replay.Ident) ident {
	var secs int64
	if f := strings.Fields(i.Date); len(f) > 0 {
		secs, _ = strconv.ParseInt(f[0], 10, 64)
	}
	return ident{Name: i.Name, Email: i.Email, When: time.Unix(secs, 0).UTC()}
}

// verified reports whether git verify-commit accepts oid's signature made with signer.
func (r *repo) verified(oid string, signer testutil.Signer) bool {
	args := append(signer.ConfigArgs(), "verify-commit", oid)
	_, err := r.run(nil, signer.Env(), args...)
	return err == nil
}

// lastChange is the newest commit reachable from head that changed path, "" when
// none did.
func (r *repo) lastChange(head, path string) (string, error) {
	return r.run(nil, nil, "rev-list", "-1", head, "--", path)
}

// newCommits lists the commits reachable from new and not from old ("" for a ref
// being created: then not from any branch).
func (r *repo) newCommits(new, old string) ([]string, error) {
	args := []string{"rev-list", new, "--not"}
	if old != "" {
		args = append(args, old)
	} else {
		args = append(args, "--branches")
	}
	out, err := r.run(nil, nil, args...)
	if err != nil || out == "" {
		return nil, err
	}
	return strings.Split(out, "\n"), nil
}

func isOID(s string) bool {
	if len(s) != 40 {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
