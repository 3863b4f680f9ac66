package forgeapi

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/refretry/refretry/internal/harness/gitserver"
	"github.com/refretry/refretry/internal/harness/testutil"
)

// Options configures a fake forge. The zero value serves "acme/widgets" (GitHub) or
// project 1, "acme/widgets" (GitLab), with one commit on main and DefaultTokens.
type Options struct {
	// Repo is the repository's owner and name (GitHub) or the project's path
	// (GitLab), "acme/widgets" when empty.
	Repo string
	// ProjectID is the GitLab project's numeric id, 1 when 0.
	ProjectID int
	// Branch is the default branch, made with one commit ("main" when empty).
	Branch string
	// Tokens are the tokens the forge accepts; nil means DefaultTokens.
	Tokens map[string]Token
	// Signer is the key GitHub signs its commits with (its web-flow key); nil means
	// a new SSH key for the server (testutil.NewSigner).
	Signer *testutil.Signer
	// Rules are the branch rules the forge enforces on its API.
	Rules []Rule
	// Faults replaces the answer to the nth API request (1 for the first; every API
	// request counts, whatever its answer).
	Faults map[int]Fault
	// Inject, when set, is asked for a fault for every API request that Faults has
	// none for; nil means none. It may run concurrently.
	Inject func(Request) *Fault
	// Git configures the smart-HTTP server that serves the same repository beside
	// the API (ReceivePack is always on).
	Git gitserver.Options
	// Now is the clock of commit dates and rate-limit resets; nil means time.Now.
	Now func() time.Time
}

// Token is what a token stands for.
type Token struct {
	// Login is the account's name; Name and Email are what its commits carry.
	Login, Name, Email string
	// App marks a GitHub App installation token (a job's GITHUB_TOKEN is one): a REST
	// commit made with it, with no author or committer given, is signed.
	App bool
	// ReadOnly refuses every write: GitHub's "Resource not accessible by
	// integration", GitLab's 403.
	ReadOnly bool
	// Job marks a GitLab CI job token: accepted in JOB-TOKEN only, as every other
	// token is accepted in PRIVATE-TOKEN or Authorization: Bearer only.
	Job bool
}

// Tokens DefaultTokens holds.
const (
	AppToken      = "ghs_forgeapi-app"   // GitHub App installation token
	UserToken     = "ghp_forgeapi-user"  // GitHub personal token
	ReadOnlyToken = "ghs_forgeapi-read"  // GitHub App token without contents: write
	GitLabToken   = "glpat-forgeapi"     // GitLab personal access token
	JobToken      = "glcbt-forgeapi-job" // GitLab CI job token
)

// DefaultTokens is the tokens a forge accepts when Options.Tokens is nil.
func DefaultTokens() map[string]Token {
	bot := Token{Login: "github-actions[bot]", Name: "github-actions[bot]",
		Email: "41898282+github-actions[bot]@users.noreply.github.com", App: true}
	ro := bot
	ro.ReadOnly = true
	return map[string]Token{
		AppToken:      bot,
		ReadOnlyToken: ro,
		UserToken:     {Login: "octocat", Name: "Mona Octocat", Email: "octocat@example.invalid"},
		GitLabToken:   {Login: "gitlab-user", Name: "GitLab User", Email: "gitlab-user@example.invalid"},
		JobToken:      {Login: "gitlab-user", Name: "GitLab User", Email: "gitlab-user@example.invalid", Job: true},
	}
}

// RuleKind is a kind of branch rule.
type RuleKind int

const (
	// RequireSignatures refuses, on GitHub, a ref update that brings the branch a
	// commit not signed by the forge's key ("Commits must have verified
	// signatures."). GitLab's push rule does not apply to API commits: there it does
	// nothing.
	RequireSignatures RuleKind = iota + 1
	// RequirePullRequest refuses every API update of the branch: GitHub's "Changes
	// must be made through a pull request.", GitLab's protected branch.
	RequirePullRequest
)

// Rule is a branch rule.
type Rule struct {
	Branch string
	Kind   RuleKind
}

// Server is a running fake forge: its API on one loopback server, the same
// repository over smart HTTP on another. Its methods are safe for concurrent use.
type Server struct {
	t      testing.TB
	opts   Options
	forge  string // "github" or "gitlab"
	repo   *repo
	ts     *httptest.Server
	git    *gitserver.Server
	signer testutil.Signer
	calls  counter
	commit sync.Mutex // GitLab: one commit at a time (see the package comment)
}

// start makes the repository and serves handler for it.
func start(t testing.TB, forge string, opts Options, routes func(*Server) http.Handler) *Server {
	t.Helper()
	opts = withDefaults(opts)
	g := testutil.NewGit(t)
	root := t.TempDir()
	env := testutil.NoMaintenanceEnv(t, root)
	dir := filepath.Join(root, filepath.FromSlash(opts.Repo)+".git")
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	s := &Server{t: t, opts: opts, forge: forge, repo: &repo{git: g.Path, dir: root, env: env}}
	if _, err := s.repo.run(nil, nil, "init", "-q", "--bare", "-b", opts.Branch, dir); err != nil {
		t.Fatal(err)
	}
	s.repo.dir = dir
	if opts.Signer != nil {
		s.signer = *opts.Signer
	} else if forge == "github" {
		s.signer = testutil.NewSigner(t, "ssh")
	}
	if err := s.initialCommit(); err != nil {
		t.Fatal(err)
	}
	gopts := opts.Git
	gopts.ReceivePack = true
	gopts.Env = append(append([]string(nil), env...), gopts.Env...)
	gs, err := gitserver.Start(g.Path, root, gopts)
	if err != nil {
		t.Fatal(err)
	}
	s.git = gs
	s.ts = httptest.NewServer(routes(s))
	t.Cleanup(s.Close)
	return s
}

func withDefaults(o Options) Options {
	if o.Repo == "" {
		o.Repo = "acme/widgets"
	}
	if o.ProjectID == 0 {
		o.ProjectID = 1
	}
	if o.Branch == "" {
		o.Branch = "main"
	}
	if o.Tokens == nil {
		o.Tokens = DefaultTokens()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// initial is the identity and date of the default branch's first commit, fixed so
// that its id is the same in every run for the same Options.
var initial = ident{Name: "Forge Setup", Email: "setup@example.invalid", When: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}

// initialCommit makes the default branch: one commit writing README.md.
func (s *Server) initialCommit() error {
	oid, err := s.commitFiles("", map[string]string{"README.md": "# " + s.opts.Repo + "\n"}, "Initial commit\n", initial, initial, nil)
	if err != nil {
		return err
	}
	return s.repo.updateRef("refs/heads/"+s.opts.Branch, oid, zeroOID)
}

// Close stops both servers.
func (s *Server) Close() {
	s.ts.Close()
	s.git.Close()
}

// CloneURL is the repository's smart-HTTP URL: push objects to a staging ref there,
// fetch what the API wrote.
func (s *Server) CloneURL() string { return s.git.URL(s.opts.Repo + ".git") }

// GitServer is the smart-HTTP server, for its counters.
func (s *Server) GitServer() *gitserver.Server { return s.git }

// Dir is the bare repository's directory.
func (s *Server) Dir() string { return s.repo.dir }

// Signer is the key the forge signs its commits with: git verify-commit accepts
// them with its ConfigArgs and Env.
func (s *Server) Signer() testutil.Signer { return s.signer }

// Git runs git in the bare repository and returns its trimmed stdout; a failure
// fails the test.
func (s *Server) Git(args ...string) string {
	s.t.Helper()
	out, err := s.repo.run(nil, nil, args...)
	if err != nil {
		s.t.Fatal(err)
	}
	return strings.TrimSpace(out)
}

// Head is branch's commit, "" when there is no such branch.
func (s *Server) Head(branch string) string {
	s.t.Helper()
	oid, err := s.repo.resolve("refs/heads/" + branch)
	if err != nil {
		s.t.Fatal(err)
	}
	return oid
}

// Land makes another writer's commit on branch (made when missing), writing content
// to path, and returns it: what a job racing the client does between two of its
// requests.
func (s *Server) Land(branch, path, content string) (string, error) {
	ref := "refs/heads/" + branch
	other := ident{Name: "Other Writer", Email: "other@example.invalid", When: s.opts.Now()}
	for {
		head, err := s.repo.resolve(ref)
		if err != nil {
			return "", err
		}
		oid, err := s.commitFiles(head, map[string]string{path: content}, "land "+path+"\n", other, other, nil)
		if err != nil {
			return "", err
		}
		old := head
		if old == "" {
			old = zeroOID
		}
		if err := s.repo.updateRef(ref, oid, old); err != errMoved {
			return oid, err
		}
	}
}

// commitFiles writes a commit on parent ("" for a root commit) whose tree is
// parent's with files (path to content) written as regular files.
func (s *Server) commitFiles(parent string, files map[string]string, msg string, author, committer ident, signer *testutil.Signer) (string, error) {
	var base string
	var parents []string
	if parent != "" {
		c, err := s.repo.readCommit(parent)
		if err != nil {
			return "", err
		}
		base, parents = c.Tree, []string{parent}
	}
	t := newTreeEdit(s.repo, base)
	for path, content := range files {
		blob, err := s.repo.writeBlob([]byte(content))
		if err != nil {
			return "", err
		}
		if err := t.set(path, entry{Mode: "100644", Type: "blob", OID: blob}); err != nil {
			return "", err
		}
	}
	tree, err := t.write()
	if err != nil {
		return "", err
	}
	return s.repo.commitTree(tree, parents, msg, author, committer, signer)
}

// readBody reads a request's body whole (the APIs' bodies are small).
func readBody(r *http.Request) []byte {
	b, _ := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	r.Body = io.NopCloser(bytes.NewReader(b))
	return b
}
