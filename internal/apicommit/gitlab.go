package apicommit

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/refretry/refretry/failure"
)

// gitlabFiles is what GitLab's commits API writes: files, and their executable bit
// (a chmod action).
var gitlabFiles = fileAPI{name: "GitLab's commits API", exec: true}

// gitlab makes one commit with POST /projects/:id/repository/commits: an action for
// each change from Base to the tip. GitLab has no compare-and-swap on the branch: it
// makes the commit on the branch as it is when the request is served, whatever the
// caller read. What keeps a landing safe is the check it does per file
// (Files::MultiService, in GitLab's source): an update, move or deletion that gives
// last_commit_id is refused ("The file has changed since you started editing it")
// unless it is the last commit that changed the file on the branch. Every update and
// deletion here gives the last commit that changed its path as of Base, and a
// creation is refused when the path exists ("A file with this name already exists"),
// so the commit lands only where no file it writes changed since Base: what it makes
// is what replaying the job's commits onto the branch's head would make, a merge of
// paths nobody else touched. A refusal is a lost race, replayed onto the new head.
// GitLab never signs these commits.
type gitlab struct{}

func (gitlab) land(ctx context.Context, p *Plan, now time.Time) (string, error) {
	actions, err := p.gitlabActions(ctx, now)
	if err != nil {
		return "", err
	}
	tip := p.l.tip()
	in := map[string]any{"branch": p.l.Branch, "commit_message": string(tip.Message), "actions": actions,
		"author_name": tip.Author.Name, "author_email": tip.Author.Email}
	var out struct {
		ID string `json:"id"`
	}
	a, err := p.e.call(ctx, http.MethodPost, "/projects/"+p.e.Repo+"/repository/commits", in, &out)
	if err != nil {
		return "", err
	}
	if a.status != http.StatusCreated || out.ID == "" {
		return "", classifyGitLab(a, now)
	}
	return out.ID, nil
}

// gitlabActions are the commit's actions: create, update or delete each path, with
// last_commit_id for updates and deletions, and chmod where the executable bit
// changes (or a new file has it).
func (p *Plan) gitlabActions(ctx context.Context, now time.Time) ([]map[string]any, error) {
	content, err := blobs(ctx, p.l.Repo, newBlobs(p.list))
	if err != nil {
		return nil, err
	}
	last, err := p.lastChanges(ctx, now)
	if err != nil {
		return nil, err
	}
	var actions []map[string]any
	for _, c := range p.list {
		a := map[string]any{"file_path": c.Path}
		switch {
		case c.NewMode == "":
			a["action"], a["last_commit_id"] = "delete", last[c.Path]
		case c.OldMode == "":
			a["action"] = "create"
		default:
			a["action"], a["last_commit_id"] = "update", last[c.Path]
		}
		if c.NewMode != "" {
			a["content"], a["encoding"] = base64.StdEncoding.EncodeToString(content[c.NewOID]), "base64"
		}
		actions = append(actions, a)
		if c.NewMode != "" && (c.NewMode == modeExec) != (c.OldMode == modeExec) && (c.OldMode != "" || c.NewMode == modeExec) {
			actions = append(actions, map[string]any{"action": "chmod", "file_path": c.Path, "execute_filemode": c.NewMode == modeExec})
		}
	}
	return actions, nil
}

// lastChanges is, for each path the landing updates or deletes, the last commit that
// changed it as of Base: read from the repository's history with one git, or, where
// that history is cut short (a shallow clone, whose boundary commit seems to have
// made every file), asked of GitLab (HEAD .../repository/files/:path?ref=Base, its
// X-Gitlab-Last-Commit-Id).
func (p *Plan) lastChanges(ctx context.Context, now time.Time) (map[string]string, error) {
	var paths []string
	for _, c := range p.list {
		if c.OldMode != "" {
			paths = append(paths, c.Path)
		}
	}
	last := map[string]string{}
	if len(paths) == 0 {
		return last, nil
	}
	repo := p.l.Repo
	out, err := repo.Command(ctx, repo.Env, append([]string{"log", "-z", "--format=%x01%H", "--name-only", "--no-renames", p.l.Base, "--"}, paths...)...).Output()
	if err != nil {
		return nil, fmt.Errorf("reading when %d paths last changed: %w", len(paths), err)
	}
	var commit string
	for _, f := range strings.Split(string(out), "\x00") {
		f = strings.TrimLeft(f, "\n")
		if oid, ok := strings.CutPrefix(f, "\x01"); ok {
			commit = oid
			continue
		}
		if _, seen := last[f]; f != "" && !seen {
			last[f] = commit
		}
	}
	boundary := p.shallowBoundary(ctx)
	for _, path := range paths {
		if c, ok := last[path]; ok && !boundary[c] {
			continue
		}
		id, err := p.askLastChange(ctx, path, now)
		if err != nil {
			return nil, err
		}
		last[path] = id
	}
	return last, nil
}

// shallowBoundary are the commits whose parents a shallow repository lacks.
func (p *Plan) shallowBoundary(ctx context.Context) map[string]bool {
	path, err := p.l.Repo.Output(ctx, "rev-parse", "--path-format=absolute", "--git-path", "shallow")
	b := map[string]bool{}
	if err != nil {
		return b
	}
	data, _ := os.ReadFile(path)
	for _, oid := range strings.Fields(string(data)) {
		b[oid] = true
	}
	return b
}

// askLastChange asks GitLab for the last commit that changed path as of Base.
func (p *Plan) askLastChange(ctx context.Context, path string, now time.Time) (string, error) {
	a, err := p.e.call(ctx, http.MethodHead, "/projects/"+p.e.Repo+"/repository/files/"+url.PathEscape(path)+"?ref="+p.l.Base, nil, nil)
	if err != nil {
		return "", err
	}
	if id := a.header.Get("X-Gitlab-Last-Commit-Id"); a.status == http.StatusOK && id != "" {
		return id, nil
	}
	return "", classifyGitLab(a, now)
}

// classifyGitLab is what a commits answer other than 201 means:
//
//   - 400 "The file has changed since you started editing it", "A file with this
//     name already exists", "A file with this name doesn't exist": a file changed
//     since Base (behind: replayed onto the new head);
//   - 403 "You are not allowed to push into this branch" (a protected branch), or a
//     push rule's refusal: declined;
//   - 401, and any other 403 (a token that may not write, such as a job token the
//     project does not allow): auth; 404: not found; 429 "Retry later" with
//     Retry-After: a limit; 5xx: the outcome is unknown;
//   - any other 400 (validation, {"error": …}): rejected.
func classifyGitLab(a answer, now time.Time) *failure.Error {
	switch {
	case a.status == http.StatusBadRequest && (strings.Contains(a.message, "has changed since you started editing") ||
		strings.Contains(a.message, "A file with this name already exists") || strings.Contains(a.message, "A file with this name doesn't exist")):
		return a.fail(failure.Behind)
	case a.status == http.StatusForbidden && (strings.Contains(a.message, "not allowed to push") || strings.Contains(a.message, "push rule")):
		f := a.fail(failure.Declined)
		f.Policy = policyLines(a.message)
		return f
	}
	return a.rest(now)
}
