package apicommit

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/refretry/refretry/failure"
)

// giteaFiles is what Gitea's contents API writes: a new file as a regular file; an
// update keeps the file's executable bit.
var giteaFiles = fileAPI{name: "Gitea's contents API", keepsExec: true}

// refuseLFS refuses the paths Git LFS takes (filter=lfs): a Gitea instance that runs
// an LFS server would store what its contents API is given there, and write a
// pointer in its place, not the job's blob.
func (p *Plan) refuseLFS(ctx context.Context) error {
	lfs, err := lfsPaths(ctx, p.l.Repo, p.l.tip().ID, p.list)
	if err != nil {
		return err
	}
	if len(lfs) > 0 {
		return refusal(fmt.Sprintf("%s would hand %s to Git LFS (filter=lfs) instead of writing the job's blob", giteaFiles.name, strings.Join(lfs, ", ")))
	}
	return nil
}

// gitea makes one commit with POST /repos/{o}/{r}/contents ("change files"), Gitea's
// only API that writes a commit: the changes from Base to the tip. Like GitLab's, it
// has no compare-and-swap on the branch that a client can ask for (Gitea's service
// has a last commit id, but 1.26's API does not take one): Gitea clones the branch as
// it is when the request is served, makes the commit there and pushes it without
// force. What keeps a landing safe is its check per file: each update and deletion
// gives the blob it replaces (sha), refused when the file is another now ("sha does
// not match"), and a creation is refused where the path exists; so the commit lands
// only where no file it writes changed since Base, as on GitLab. Gitea's own window,
// from its clone to its push, loses races in two ways, both reproduced against 1.26
// (change-files requests sent together, or 400 ms apart): a push that raced another
// is a 403 with git's "cannot lock ref … is at X but expected Y", and one made after
// the branch moved is a 500 (git's non-fast-forward, which Gitea's handler does not
// map, and whose message it withholds from a user who is not an admin). Gitea signs
// the commit when its instance is configured to ([repository.signing] CRUD_ACTIONS).
type gitea struct{}

func (gitea) land(ctx context.Context, p *Plan, now time.Time) (string, error) {
	content, err := blobs(ctx, p.l.Repo, newBlobs(p.list))
	if err != nil {
		return "", err
	}
	files := []map[string]string{}
	for _, c := range p.list {
		f := map[string]string{"path": c.Path}
		switch {
		case c.NewMode == "":
			f["operation"], f["sha"] = "delete", c.OldOID
		case c.OldMode == "":
			f["operation"] = "create"
		default:
			f["operation"], f["sha"] = "update", c.OldOID
		}
		if c.NewMode != "" {
			f["content"] = base64.StdEncoding.EncodeToString(content[c.NewOID])
		}
		files = append(files, f)
	}
	me, err := p.e.giteaAccount(ctx, now)
	if err != nil {
		return "", err
	}
	tip := p.l.tip()
	in := map[string]any{"branch": p.l.Branch, "message": string(tip.Message), "files": files,
		"author": map[string]string{"name": tip.Author.Name, "email": tip.Author.Email}}
	if me != nil {
		in["committer"] = me
	}
	var out struct {
		Commit struct {
			SHA string `json:"sha"`
		} `json:"commit"`
	}
	a, err := p.e.call(ctx, http.MethodPost, "/repos/"+p.e.Repo+"/contents", in, &out)
	if err != nil {
		return "", err
	}
	if a.status != http.StatusCreated || out.Commit.SHA == "" {
		return "", classifyGitea(a, now)
	}
	return out.Commit.SHA, nil
}

// giteaAccount is the token's account as a committer (GET /user, once): Gitea makes
// the committer the author when only an author is given, and the commit is the
// token's, whoever wrote its changes. A token that may not read its account (no
// read:user) gets nil: the commit is then the author's alone, as Gitea makes it.
func (e Endpoint) giteaAccount(ctx context.Context, now time.Time) (map[string]string, error) {
	e.self.mu.Lock()
	defer e.self.mu.Unlock()
	if !e.self.asked {
		var u struct {
			Login    string `json:"login"`
			FullName string `json:"full_name"`
			Email    string `json:"email"`
		}
		a, err := e.call(ctx, http.MethodGet, "/user", nil, &u)
		if err != nil {
			return nil, err
		}
		if f := classifyGitea(a, now); a.status != http.StatusOK && (f.Class.Retryable() || f.Class == failure.Unknown) {
			return nil, f
		}
		e.self.asked = true
		e.self.name, e.self.email = firstOf(u.FullName, u.Login), u.Email
	}
	if e.self.email == "" {
		return nil, nil
	}
	return map[string]string{"name": e.self.name, "email": e.self.email}, nil
}

// movedRef is git's words for a compare-and-swap that failed, as Gitea passes on the
// push of its clone.
var movedRef = regexp.MustCompile(`cannot lock ref '([^']+)': is at ([0-9a-f]+) but expected ([0-9a-f]+)`)

// classifyGitea is what a contents answer other than 201 means:
//
//   - 403 with git's "cannot lock ref '<ref>': is at X but expected Y": another
//     commit landed while Gitea pushed this one (behind, Moved set);
//   - 500: Gitea's push of the commit was refused, as when the branch moved after
//     Gitea cloned it (non-fast-forward), or the server failed; an admin sees git's
//     words, anyone else an empty message, so it is taken as an unknown outcome,
//     which the caller settles with a replay onto the branch as it now is;
//   - 403 "push is rejected" (git refused the push of its clone, giving no reason):
//     as a 500;
//   - 422 "sha does not match", "repository file already exists", "file CommitID
//     does not match": a file changed since Base (behind);
//   - 403 for a protected branch or path, or a push its hooks refused ("user cannot
//     commit", "path is protected", "pre-receive hook declined"), and 423 (an
//     archived repository): declined;
//   - 401, and any other 403 (a token without write:repository): auth; 404: not
//     found; 429: a limit; any other 4xx: rejected.
func classifyGitea(a answer, now time.Time) *failure.Error {
	if m := movedRef.FindStringSubmatch(a.message); a.status == http.StatusForbidden && m != nil {
		f := a.fail(failure.Behind)
		f.Ref, f.Moved = m[1], &failure.Moved{Ref: m[1], Actual: m[2], Expected: m[3]}
		return f
	}
	lower := strings.ToLower(a.message)
	switch {
	case a.status == http.StatusForbidden && lower == "push is rejected":
		// Gitea's words for a push of its clone that git rejected without a
		// server's reason: settled by looking at the branch, as a 500 is.
		return a.fail(failure.Unknown)
	case a.status == http.StatusUnprocessableEntity && (strings.Contains(lower, "sha does not match") ||
		strings.Contains(lower, "already exists") || strings.Contains(lower, "commitid does not match")):
		return a.fail(failure.Behind)
	case a.status == http.StatusLocked, a.status == http.StatusForbidden && (strings.Contains(lower, "cannot commit") ||
		strings.Contains(lower, "protected") || strings.Contains(lower, "hook declined") || strings.Contains(lower, "not allowed")):
		f := a.fail(failure.Declined)
		f.Policy = policyLines(a.message)
		return f
	}
	return a.rest(now)
}
