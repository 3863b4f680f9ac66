package forgeapi

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/refretry/refretry/internal/harness/testutil"
)

// StartGitHub starts a fake GitHub for the test: its REST git data API under
// APIURL() (as api.github.com's root), GraphQL at GraphQLURL(), the repository over
// smart HTTP at CloneURL(). It stops when the test ends.
func StartGitHub(t testing.TB, opts Options) *Server {
	t.Helper()
	return start(t, "github", opts, (*Server).githubRoutes)
}

// APIURL is the API's root: GitHub's REST root (as https://api.github.com), GitLab's
// /api/v4.
func (s *Server) APIURL() string {
	if s.forge == "gitlab" {
		return s.ts.URL + "/api/v4"
	}
	return s.ts.URL
}

// GraphQLURL is GitHub's GraphQL endpoint.
func (s *Server) GraphQLURL() string { return s.ts.URL + "/graphql" }

func (s *Server) githubRoutes() http.Handler {
	repo := "/repos/{owner}/{repo}/git/"
	mux := s.serveMux([]route{
		{"POST " + repo + "blobs", GitHubCreateBlob, s.createBlob},
		{"POST " + repo + "trees", GitHubCreateTree, s.createTree},
		{"POST " + repo + "commits", GitHubCreateCommit, s.createCommit},
		{"GET " + repo + "commits/{sha}", GitHubGetCommit, s.getCommit},
		{"GET /repos/{owner}/{repo}/commits/{ref...}", GitHubRepoCommit, s.repoCommit},
		{"GET " + repo + "ref/{ref...}", GitHubGetRef, s.getRef},
		{"POST " + repo + "refs", GitHubCreateRef, s.createRef},
		{"PATCH " + repo + "refs/{ref...}", GitHubUpdateRef, s.updateRef},
	}, s.githubAuth, s.githubRepo, func(w http.ResponseWriter, r *http.Request) {
		githubError(w, http.StatusNotFound, "Not Found", "")
	})
	mux.HandleFunc("POST /graphql", s.graphql)
	return mux
}

// githubToken is the token of Authorization: "Bearer <t>" or "token <t>".
func githubToken(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	for _, scheme := range []string{"Bearer ", "bearer ", "token "} {
		if t, ok := strings.CutPrefix(h, scheme); ok {
			return strings.TrimSpace(t), true
		}
	}
	return "", false
}

// githubAuth is the request's token; it answers 401 for none or an unknown one, and
// 403 for a write with a read-only one.
func (s *Server) githubAuth(w http.ResponseWriter, r *http.Request, write bool) (Token, bool) {
	raw, ok := githubToken(r)
	if !ok {
		githubError(w, http.StatusUnauthorized, "Requires authentication", "")
		return Token{}, false
	}
	tok, ok := s.opts.Tokens[raw]
	if !ok || tok.Job {
		githubError(w, http.StatusUnauthorized, "Bad credentials", "")
		return Token{}, false
	}
	if tok.ReadOnly && write {
		githubError(w, http.StatusForbidden, "Resource not accessible by integration", "")
		return Token{}, false
	}
	return tok, true
}

// githubRepo answers 404 for a repository other than the server's.
func (s *Server) githubRepo(w http.ResponseWriter, r *http.Request) bool {
	if r.PathValue("owner")+"/"+r.PathValue("repo") != s.opts.Repo {
		githubError(w, http.StatusNotFound, "Not Found", "")
		return false
	}
	return true
}

func (s *Server) repoURL() string { return s.ts.URL + "/repos/" + s.opts.Repo }

func (s *Server) createBlob(w http.ResponseWriter, r *http.Request, _ Token) {
	var in struct{ Content, Encoding string }
	if !s.decode(w, r, &in) {
		return
	}
	data := []byte(in.Content)
	switch in.Encoding {
	case "", "utf-8":
	case "base64":
		var err error
		if data, err = base64.StdEncoding.DecodeString(in.Content); err != nil {
			githubError(w, http.StatusUnprocessableEntity, "content is not valid Base64", "/git/blobs#create-a-blob")
			return
		}
	default:
		githubError(w, http.StatusUnprocessableEntity, "encoding must be utf-8 or base64", "/git/blobs#create-a-blob")
		return
	}
	oid, err := s.repo.writeBlob(data)
	if err != nil {
		githubError(w, http.StatusInternalServerError, err.Error(), "")
		return
	}
	writeJSON(w, http.StatusCreated, map[string]string{"sha": oid, "url": s.repoURL() + "/git/blobs/" + oid})
}

// treeItem is one item of a tree request; SHA is raw to tell null (delete the path)
// from absent.
type treeItem struct {
	Path, Mode, Type string
	SHA              json.RawMessage
	Content          *string
}

func (s *Server) createTree(w http.ResponseWriter, r *http.Request, _ Token) {
	var in struct {
		BaseTree string `json:"base_tree"`
		Tree     []treeItem
	}
	if !s.decode(w, r, &in) {
		return
	}
	const doc = "/git/trees#create-a-tree"
	if in.BaseTree != "" && s.repo.objectType(in.BaseTree) != "tree" {
		githubError(w, http.StatusUnprocessableEntity, "base_tree is not a valid tree oid", doc)
		return
	}
	t := newTreeEdit(s.repo, in.BaseTree)
	for _, it := range in.Tree {
		if msg := s.applyTreeItem(t, it); msg != "" {
			githubError(w, http.StatusUnprocessableEntity, msg, doc)
			return
		}
	}
	oid, err := t.write()
	if err != nil {
		githubError(w, http.StatusInternalServerError, err.Error(), "")
		return
	}
	names, entries, err := t.list()
	if err != nil {
		githubError(w, http.StatusInternalServerError, err.Error(), "")
		return
	}
	items := make([]map[string]string, 0, len(names))
	for _, name := range names {
		e := entries[name]
		items = append(items, map[string]string{"path": name, "mode": e.Mode, "type": e.Type, "sha": e.OID,
			"url": s.repoURL() + "/git/" + e.Type + "s/" + e.OID})
	}
	writeJSON(w, http.StatusCreated, map[string]any{"sha": oid, "url": s.repoURL() + "/git/trees/" + oid,
		"tree": items, "truncated": false})
}

// applyTreeItem applies one item to t and returns why it cannot be, "" when it was.
func (s *Server) applyTreeItem(t *treeEdit, it treeItem) string {
	want, ok := modeTypes[it.Mode]
	switch {
	case !ok:
		return "tree.mode " + it.Mode + " is not one of 100644, 100755, 040000, 160000, 120000"
	case it.Type != want:
		return "tree.type " + it.Type + " does not match mode " + it.Mode
	case string(it.SHA) == "null":
		if _, err := t.remove(it.Path); err != nil {
			return err.Error()
		}
		return ""
	}
	var oid string
	switch {
	case it.Content != nil && len(it.SHA) == 0 && want == "blob":
		var err error
		if oid, err = s.repo.writeBlob([]byte(*it.Content)); err != nil {
			return err.Error()
		}
	case it.Content == nil && json.Unmarshal(it.SHA, &oid) == nil:
		if want != "commit" && s.repo.objectType(oid) != want {
			return "tree.sha " + oid + " is not a valid " + want
		}
	default:
		return "tree item " + it.Path + " needs exactly one of sha and content"
	}
	if err := t.set(it.Path, entry{Mode: it.Mode, Type: want, OID: oid}); err != nil {
		return err.Error()
	}
	return ""
}

// person is an author or committer in a REST request.
type person struct {
	Name, Email string
	Date        string
}

func (s *Server) ident(p *person, tok Token) (ident, error) {
	if p == nil {
		return ident{Name: tok.Name, Email: tok.Email, When: s.opts.Now()}, nil
	}
	when := s.opts.Now()
	if p.Date != "" {
		var err error
		if when, err = time.Parse(time.RFC3339, p.Date); err != nil {
			return ident{}, err
		}
	}
	return ident{Name: p.Name, Email: p.Email, When: when}, nil
}

// webFlow is the committer of the commits GitHub signs.
var webFlow = ident{Name: "GitHub", Email: "noreply@github.com"}

func (s *Server) createCommit(w http.ResponseWriter, r *http.Request, tok Token) {
	var in struct {
		Message, Tree, Signature string
		Parents                  []string
		Author, Committer        *person
	}
	if !s.decode(w, r, &in) {
		return
	}
	const doc = "/git/commits#create-a-commit"
	author, aerr := s.ident(in.Author, tok)
	committer, cerr := s.ident(in.Committer, tok)
	if in.Committer == nil {
		committer = author
	}
	msg := commitRequestError(s.repo, in.Message, in.Tree, in.Signature, in.Parents, errors.Join(aerr, cerr))
	if msg != "" {
		githubError(w, http.StatusUnprocessableEntity, msg, doc)
		return
	}
	var signer *testutil.Signer
	if tok.App && in.Author == nil && in.Committer == nil {
		signer = &s.signer
		committer = webFlow
		committer.When = author.When
	}
	oid, err := s.repo.commitTree(in.Tree, in.Parents, in.Message, author, committer, signer)
	if err != nil {
		githubError(w, http.StatusInternalServerError, err.Error(), "")
		return
	}
	s.answerCommit(w, http.StatusCreated, oid)
}

// commitRequestError is why a commit request cannot be made, "" when it can.
func commitRequestError(r *repo, message, tree, signature string, parents []string, identErr error) string {
	switch {
	case message == "":
		return "Invalid request.\n\n\"message\" wasn't supplied."
	case r.objectType(tree) != "tree":
		return "Tree SHA does not exist"
	case signature != "":
		return "forgeapi: a commit's own signature is not modelled"
	case identErr != nil:
		return "author or committer date is not ISO 8601: " + identErr.Error()
	}
	for _, p := range parents {
		if r.objectType(p) != "commit" {
			return "Parent SHA does not exist or is not a commit object"
		}
	}
	return ""
}

func (s *Server) getCommit(w http.ResponseWriter, r *http.Request, _ Token) {
	if s.repo.objectType(r.PathValue("sha")) != "commit" {
		githubError(w, http.StatusNotFound, "Not Found", "/git/commits#get-a-commit-object")
		return
	}
	s.answerCommit(w, http.StatusOK, r.PathValue("sha"))
}

// answerCommit answers status with GitHub's git data description of commit oid.
func (s *Server) answerCommit(w http.ResponseWriter, status int, oid string) {
	c, err := s.repo.readCommit(oid)
	if err != nil {
		githubError(w, http.StatusInternalServerError, err.Error(), "")
		return
	}
	writeJSON(w, status, s.gitCommitJSON(c))
}

// gitCommitJSON is the git data API's description of c.
func (s *Server) gitCommitJSON(c commitInfo) map[string]any {
	who := func(i ident) map[string]string {
		return map[string]string{"name": i.Name, "email": i.Email, "date": i.When.Format(time.RFC3339)}
	}
	parents := make([]map[string]string, 0, len(c.Parents))
	for _, p := range c.Parents {
		parents = append(parents, map[string]string{"sha": p, "url": s.repoURL() + "/git/commits/" + p})
	}
	verified, reason := s.verification(c)
	return map[string]any{
		"sha": c.OID, "url": s.repoURL() + "/git/commits/" + c.OID, "html_url": s.git.BaseURL() + "/" + s.opts.Repo + "/commit/" + c.OID,
		"author": who(c.Author), "committer": who(c.Committer), "message": c.Message,
		"tree":    map[string]string{"sha": c.Tree, "url": s.repoURL() + "/git/trees/" + c.Tree},
		"parents": parents,
		"verification": map[string]any{"verified": verified, "reason": reason,
			"signature": nil, "payload": nil, "verified_at": nil},
	}
}

// repoCommit answers GET /repos/{o}/{r}/commits/{ref}: the commit a commit id or a
// branch names, with the git data description (verification included) under
// "commit", as GitHub nests it.
func (s *Server) repoCommit(w http.ResponseWriter, r *http.Request, _ Token) {
	ref := r.PathValue("ref")
	oid := ref
	if s.repo.objectType(ref) != "commit" {
		var err error
		if oid, err = s.repo.resolve("refs/heads/" + ref); err != nil || oid == "" {
			githubError(w, http.StatusUnprocessableEntity, "No commit found for SHA: "+ref, "/commits/commits#get-a-commit")
			return
		}
	}
	c, err := s.repo.readCommit(oid)
	if err != nil {
		githubError(w, http.StatusInternalServerError, err.Error(), "")
		return
	}
	inner := s.gitCommitJSON(c)
	parents := inner["parents"]
	for _, k := range []string{"sha", "parents", "html_url"} {
		delete(inner, k)
	}
	writeJSON(w, http.StatusOK, map[string]any{"sha": oid, "commit": inner, "parents": parents,
		"url": s.repoURL() + "/commits/" + oid, "html_url": s.git.BaseURL() + "/" + s.opts.Repo + "/commit/" + oid})
}

// verification is GitHub's verdict on c's signature: "valid" for one made with the
// forge's key, "unsigned" without one, "unknown_key" for any other.
func (s *Server) verification(c commitInfo) (bool, string) {
	switch {
	case !c.Signed:
		return false, "unsigned"
	case s.signer.Format != "" && s.repo.verified(c.OID, s.signer):
		return true, "valid"
	}
	return false, "unknown_key"
}
