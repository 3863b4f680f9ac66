package forgeapi

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// StartGitLab starts a fake GitLab for the test: its REST API under APIURL()
// (/api/v4), the project's repository over smart HTTP at CloneURL(). It stops when
// the test ends.
func StartGitLab(t testing.TB, opts Options) *Server {
	t.Helper()
	return start(t, "gitlab", opts, (*Server).gitlabRoutes)
}

func (s *Server) gitlabRoutes() http.Handler {
	project := "/api/v4/projects/{id}/repository/"
	return s.serveMux([]route{
		{"POST " + project + "commits", GitLabCreateCommit, s.gitlabCommit},
		{"GET " + project + "branches/{branch...}", GitLabGetBranch, s.gitlabBranch},
		{"GET " + project + "files/{path...}", GitLabGetFile, s.gitlabFile},
	}, s.gitlabAuth, s.gitlabProject, func(w http.ResponseWriter, r *http.Request) {
		gitlabError(w, http.StatusNotFound, "404 Not Found")
	})
}

// gitlabAuth is the request's token, from PRIVATE-TOKEN, JOB-TOKEN (a job token
// only) or Authorization: Bearer; it answers 401 for none or an unknown one, and 403
// for a write with a read-only one.
func (s *Server) gitlabAuth(w http.ResponseWriter, r *http.Request, write bool) (Token, bool) {
	raw, job := r.Header.Get("PRIVATE-TOKEN"), false
	if raw == "" {
		raw, job = r.Header.Get("JOB-TOKEN"), true
	}
	if raw == "" {
		raw, job = strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "), false
	}
	tok, ok := s.opts.Tokens[raw]
	if raw == "" || !ok || tok.Job != job {
		gitlabError(w, http.StatusUnauthorized, "401 Unauthorized")
		return Token{}, false
	}
	if write && tok.ReadOnly {
		gitlabError(w, http.StatusForbidden, "403 Forbidden")
		return Token{}, false
	}
	return tok, true
}

// gitlabProject answers 404 for a project other than the server's, named by its id
// or its URL-encoded path.
func (s *Server) gitlabProject(w http.ResponseWriter, r *http.Request) bool {
	id := r.PathValue("id")
	if id != strconv.Itoa(s.opts.ProjectID) && id != s.opts.Repo {
		gitlabError(w, http.StatusNotFound, "404 Project Not Found")
		return false
	}
	return true
}

func (s *Server) gitlabBranch(w http.ResponseWriter, r *http.Request, _ Token) {
	name := r.PathValue("branch")
	head, err := s.repo.resolve("refs/heads/" + name)
	switch {
	case err != nil:
		gitlabError(w, http.StatusInternalServerError, err.Error())
		return
	case head == "":
		gitlabError(w, http.StatusNotFound, "404 Branch Not Found")
		return
	}
	c, err := s.repo.readCommit(head)
	if err != nil {
		gitlabError(w, http.StatusInternalServerError, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"name": name, "commit": s.gitlabCommitJSON(c), "merged": false,
		"protected": s.gitlabProtected(name), "default": name == s.opts.Branch,
		"developers_can_push": false, "developers_can_merge": false, "can_push": !s.gitlabProtected(name),
		"web_url": s.git.BaseURL() + "/" + s.opts.Repo + "/-/tree/" + name,
	})
}

// gitlabFile answers GET (and HEAD) .../repository/files/:file_path?ref=: the file's
// blob, and the last commit that changed it as of ref, in the body and in GitLab's
// X-Gitlab-* headers (what a client reads with HEAD).
func (s *Server) gitlabFile(w http.ResponseWriter, r *http.Request, _ Token) {
	path, ref := r.PathValue("path"), r.URL.Query().Get("ref")
	commit := ref
	if s.repo.objectType(ref) != "commit" {
		commit, _ = s.repo.resolve("refs/heads/" + ref)
	}
	var blob, last string
	if commit != "" {
		blob, _ = s.repo.run(nil, nil, "rev-parse", "--verify", "-q", commit+":"+path)
		last, _ = s.repo.lastChange(commit, path)
	}
	blob, last = strings.TrimSpace(blob), strings.TrimSpace(last)
	if blob == "" || last == "" {
		gitlabError(w, http.StatusNotFound, "404 File Not Found")
		return
	}
	w.Header().Set("X-Gitlab-File-Path", path)
	w.Header().Set("X-Gitlab-Ref", ref)
	w.Header().Set("X-Gitlab-Blob-Id", blob)
	w.Header().Set("X-Gitlab-Commit-Id", commit)
	w.Header().Set("X-Gitlab-Last-Commit-Id", last)
	writeJSON(w, http.StatusOK, map[string]any{"file_path": path, "ref": ref, "blob_id": blob, "commit_id": commit, "last_commit_id": last})
}

func (s *Server) gitlabProtected(branch string) bool {
	for _, rule := range s.opts.Rules {
		if rule.Branch == branch && rule.Kind == RequirePullRequest {
			return true
		}
	}
	return false
}

// gitlabCommitJSON is GitLab's description of a commit.
func (s *Server) gitlabCommitJSON(c commitInfo) map[string]any {
	title, _, _ := strings.Cut(c.Message, "\n")
	parents := c.Parents
	if parents == nil {
		parents = []string{}
	}
	return map[string]any{
		"id": c.OID, "short_id": c.OID[:8], "title": title, "message": c.Message, "parent_ids": parents,
		"author_name": c.Author.Name, "author_email": c.Author.Email, "authored_date": c.Author.When.Format(time.RFC3339),
		"committer_name": c.Committer.Name, "committer_email": c.Committer.Email,
		"committed_date": c.Committer.When.Format(time.RFC3339), "created_at": c.Committer.When.Format(time.RFC3339),
		"web_url": s.git.BaseURL() + "/" + s.opts.Repo + "/-/commit/" + c.OID,
	}
}

// glAction is one action of a commit request.
type glAction struct {
	Action          string
	FilePath        string `json:"file_path"`
	PreviousPath    string `json:"previous_path"`
	Content         *string
	Encoding        string
	LastCommitID    string `json:"last_commit_id"`
	ExecuteFilemode bool   `json:"execute_filemode"`
}

// glCommitRequest is POST .../repository/commits's body.
type glCommitRequest struct {
	Branch        string
	CommitMessage string `json:"commit_message"`
	StartBranch   string `json:"start_branch"`
	StartSHA      string `json:"start_sha"`
	Actions       []glAction
	AuthorName    string `json:"author_name"`
	AuthorEmail   string `json:"author_email"`
}

// invalid is what GitLab's parameter validation says of the request (its "error"),
// "" when it passes.
func (in glCommitRequest) invalid() string {
	var errs []string
	for _, f := range []struct {
		name  string
		unset bool
	}{{"branch", in.Branch == ""}, {"commit_message", in.CommitMessage == ""}, {"actions", len(in.Actions) == 0}} {
		if f.unset {
			errs = append(errs, f.name+" is missing")
		}
	}
	for i, a := range in.Actions {
		switch a.Action {
		case "create", "update", "delete", "move", "chmod":
		default:
			errs = append(errs, fmt.Sprintf("actions[%d][action] does not have a valid value", i))
		}
	}
	return strings.Join(errs, ", ")
}

// glRefusal is a commit request GitLab refuses: its status and message.
type glRefusal struct {
	status int
	msg    string
}

func badRequest(format string, args ...any) *glRefusal {
	return &glRefusal{http.StatusBadRequest, fmt.Sprintf(format, args...)}
}

func (s *Server) gitlabCommit(w http.ResponseWriter, r *http.Request, tok Token) {
	var in glCommitRequest
	if !s.decode(w, r, &in) {
		return
	}
	if invalid := in.invalid(); invalid != "" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": invalid})
		return
	}
	if s.gitlabProtected(in.Branch) {
		gitlabError(w, http.StatusForbidden, "You are not allowed to push into this branch")
		return
	}
	oid, refusal := s.gitlabLand(in, tok)
	if refusal != nil {
		gitlabError(w, refusal.status, refusal.msg)
		return
	}
	c, err := s.repo.readCommit(oid)
	if err != nil {
		gitlabError(w, http.StatusInternalServerError, err.Error())
		return
	}
	writeJSON(w, http.StatusCreated, s.gitlabCommitJSON(c))
}

// gitlabLand makes in's commit on the branch as it is now, whatever the client saw
// of it: GitLab has no compare-and-swap on the branch. Commits are made one at a
// time; a branch moved by someone else (a push, Land) meanwhile is read again.
func (s *Server) gitlabLand(in glCommitRequest, tok Token) (string, *glRefusal) {
	s.commit.Lock()
	defer s.commit.Unlock()
	ref := "refs/heads/" + in.Branch
	for {
		head, err := s.repo.resolve(ref)
		if err != nil {
			return "", &glRefusal{http.StatusInternalServerError, err.Error()}
		}
		base, refusal := s.gitlabBase(in, head)
		if refusal != nil {
			return "", refusal
		}
		oid, refusal := s.gitlabCommitOn(base, in, tok)
		if refusal != nil {
			return "", refusal
		}
		old := head
		if old == "" {
			old = zeroOID
		}
		switch err := s.repo.updateRef(ref, oid, old); {
		case err == errMoved:
			continue
		case err != nil:
			return "", &glRefusal{http.StatusInternalServerError, err.Error()}
		}
		return oid, nil
	}
}

// gitlabBase is the commit the new one goes on: the branch's head, or for a branch
// that does not exist yet, start_branch's head or start_sha.
func (s *Server) gitlabBase(in glCommitRequest, head string) (string, *glRefusal) {
	switch {
	case head != "":
		return head, nil
	case in.StartSHA != "":
		if s.repo.objectType(in.StartSHA) != "commit" {
			return "", badRequest("Invalid start_sha %s", in.StartSHA)
		}
		return in.StartSHA, nil
	case in.StartBranch != "":
		start, err := s.repo.resolve("refs/heads/" + in.StartBranch)
		if err == nil && start == "" {
			return "", badRequest("Invalid reference name: %s", in.StartBranch)
		}
		return start, nil
	}
	return "", badRequest("You can only create or edit files when you are on a branch")
}

// gitlabCommitOn writes in's commit on base: its actions applied to base's tree.
// GitLab never signs it.
func (s *Server) gitlabCommitOn(base string, in glCommitRequest, tok Token) (string, *glRefusal) {
	c, err := s.repo.readCommit(base)
	if err != nil {
		return "", &glRefusal{http.StatusInternalServerError, err.Error()}
	}
	t := newTreeEdit(s.repo, c.Tree)
	for _, a := range in.Actions {
		if refusal := s.applyAction(t, base, a); refusal != nil {
			return "", refusal
		}
	}
	tree, err := t.write()
	if err != nil {
		return "", &glRefusal{http.StatusInternalServerError, err.Error()}
	}
	committer := ident{Name: tok.Name, Email: tok.Email, When: s.opts.Now()}
	author := committer
	if in.AuthorName != "" || in.AuthorEmail != "" {
		author.Name, author.Email = in.AuthorName, in.AuthorEmail
	}
	oid, err := s.repo.commitTree(tree, []string{base}, in.CommitMessage, author, committer, nil)
	if err != nil {
		return "", &glRefusal{http.StatusInternalServerError, err.Error()}
	}
	return oid, nil
}
