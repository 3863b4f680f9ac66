package forgeapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
)

// Kind is a kind of API request, for counting and fault injection.
type Kind string

const (
	GitHubCreateBlob   Kind = "github.create-blob"   // POST /repos/{o}/{r}/git/blobs
	GitHubCreateTree   Kind = "github.create-tree"   // POST /repos/{o}/{r}/git/trees
	GitHubCreateCommit Kind = "github.create-commit" // POST /repos/{o}/{r}/git/commits
	GitHubGetCommit    Kind = "github.get-commit"    // GET /repos/{o}/{r}/git/commits/{sha}
	GitHubRepoCommit   Kind = "github.repo-commit"   // GET /repos/{o}/{r}/commits/{ref}
	GitHubGetRef       Kind = "github.get-ref"       // GET /repos/{o}/{r}/git/ref/{ref}
	GitHubCreateRef    Kind = "github.create-ref"    // POST /repos/{o}/{r}/git/refs
	GitHubUpdateRef    Kind = "github.update-ref"    // PATCH /repos/{o}/{r}/git/refs/{ref}
	// GitHubCommitOnBranch is a GraphQL document whose operation is a mutation
	// (createCommitOnBranch); GitHubGraphQLQuery any other GraphQL document, one
	// that does not parse included.
	GitHubCommitOnBranch Kind = "github.graphql-mutation"
	GitHubGraphQLQuery   Kind = "github.graphql-query"
	GitLabCreateCommit   Kind = "gitlab.create-commit" // POST /api/v4/projects/:id/repository/commits
	GitLabGetBranch      Kind = "gitlab.get-branch"    // GET /api/v4/projects/:id/repository/branches/:branch
	GitLabGetFile        Kind = "gitlab.get-file"      // GET or HEAD /api/v4/projects/:id/repository/files/:file_path
	// Unknown is a request for anything else (answered 404).
	Unknown Kind = "unknown"
)

// Request is an API request as Options.Inject sees it.
type Request struct {
	N      int  // the request's number: 1 for the server's first API request
	Kind   Kind // what it asks for
	KindN  int  // its number among the requests of its kind
	Method string
	Path   string // as sent, still escaped
}

// counter numbers requests, all together and by kind.
type counter struct {
	mu    sync.Mutex
	n     int
	kinds map[Kind]int
}

func (c *counter) next(k Kind) (n, kn int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.kinds == nil {
		c.kinds = map[Kind]int{}
	}
	c.n++
	c.kinds[k]++
	return c.n, c.kinds[k]
}

// Requests is the number of API requests received so far, faulted and refused ones
// included (not the smart-HTTP ones: see GitServer).
func (s *Server) Requests() int {
	s.calls.mu.Lock()
	defer s.calls.mu.Unlock()
	return s.calls.n
}

// Count is the number of API requests of kind k received so far.
func (s *Server) Count(k Kind) int {
	s.calls.mu.Lock()
	defer s.calls.mu.Unlock()
	return s.calls.kinds[k]
}

// authed is a handler that is given the request's token.
type authed func(http.ResponseWriter, *http.Request, Token)

// route is one endpoint of a forge's API.
type route struct {
	pattern string // a ServeMux pattern
	kind    Kind
	h       authed
}

// serveMux serves routes, each numbered and faulted (handle), authenticated (auth:
// a write for any method but GET) and checked to name the server's repository
// (inRepo); any other request is of kind Unknown, answered by notFound.
func (s *Server) serveMux(routes []route, auth func(http.ResponseWriter, *http.Request, bool) (Token, bool),
	inRepo func(http.ResponseWriter, *http.Request) bool, notFound http.HandlerFunc) *http.ServeMux {
	mux := http.NewServeMux()
	for _, rt := range routes {
		mux.HandleFunc(rt.pattern, func(w http.ResponseWriter, r *http.Request) {
			s.handle(w, r, rt.kind, func(w http.ResponseWriter, r *http.Request) {
				if tok, ok := auth(w, r, r.Method != http.MethodGet); ok && inRepo(w, r) {
					rt.h(w, r, tok)
				}
			})
		})
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { s.handle(w, r, Unknown, notFound) })
	return mux
}

// handle numbers a request of kind k and answers it: with its fault when it has one
// (after landing a commit, or serving it first, as the fault says), else with serve.
func (s *Server) handle(w http.ResponseWriter, r *http.Request, k Kind, serve http.HandlerFunc) {
	n, kn := s.calls.next(k)
	f, ok := s.opts.Faults[n]
	if !ok && s.opts.Inject != nil {
		if p := s.opts.Inject(Request{N: n, Kind: k, KindN: kn, Method: r.Method, Path: r.URL.EscapedPath()}); p != nil {
			f, ok = *p, true
		}
	}
	if !ok {
		serve(w, r)
		return
	}
	if f.Land != "" {
		if _, err := s.Land(f.Land, fmt.Sprintf("landed/request-%d.txt", n), fmt.Sprintf("landed before request %d\n", n)); err != nil {
			http.Error(w, "forgeapi: landing a commit: "+err.Error(), http.StatusInternalServerError)
			return
		}
	}
	if f.Status == 0 {
		serve(w, r)
		return
	}
	if f.Apply {
		serve(httptest.NewRecorder(), r) // applied; its answer is lost
	}
	for key, v := range f.Header {
		w.Header()[key] = v
	}
	w.WriteHeader(f.Status)
	w.Write([]byte(f.Body))
}

// writeJSON answers v as JSON with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "forgeapi: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// githubError answers GitHub's REST error shape: message, documentation_url and the
// status as a string.
func githubError(w http.ResponseWriter, status int, msg, doc string) {
	writeJSON(w, status, githubErrorBody(status, msg, doc))
}

func githubErrorBody(status int, msg, doc string) map[string]string {
	return map[string]string{"message": msg, "documentation_url": docsURL + doc, "status": strconv.Itoa(status)}
}

// docsURL is where GitHub's error answers point; the fragments are the endpoints'.
const docsURL = "https://docs.github.com/rest"

// gitlabError answers GitLab's error shape.
func gitlabError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"message": msg})
}

// decode reads a JSON body into v; false (after answering 400 in the forge's shape)
// when it does not parse.
func (s *Server) decode(w http.ResponseWriter, r *http.Request, v any) bool {
	d := json.NewDecoder(strings.NewReader(string(readBody(r))))
	if err := d.Decode(v); err != nil {
		if s.forge == "github" {
			githubError(w, http.StatusBadRequest, "Problems parsing JSON", "")
		} else {
			gitlabError(w, http.StatusBadRequest, "400 Bad request - "+err.Error())
		}
		return false
	}
	return true
}
