// Package gitserver serves bare git repositories over git's smart HTTP protocol, for
// tests, fixture capture and benchmarks. It is test support, not product.
//
// The contract:
//
//   - Start runs the given git's own `git http-backend` as a CGI program (net/http/cgi)
//     behind an HTTP/1.1 server on a loopback address. Every repository under root is
//     served (GIT_PROJECT_ROOT=root, GIT_HTTP_EXPORT_ALL=1); URL(repo) names one. A
//     repository that is not there gets http-backend's own 404.
//   - http-backend runs with GIT_CONFIG_NOSYSTEM=1 and whatever Options.Env adds; it
//     inherits PATH (and the few variables net/http/cgi always passes on), nothing else
//     of this process's environment.
//   - Faults are injected deterministically, by the number n of the request (1 for the
//     first request the server receives; every request counts, whatever happened to
//     it). The first After requests are spared; for the others, with m = n - After,
//     these are checked in order: m <= HangUp closes the connection without a response;
//     FailStatus answers with that status when FailFirst is 0 or m <= FailFirst. Then
//     a server with a User answers 401 to any request without exactly those basic-auth
//     credentials. Only a request that passed all three reaches http-backend, with
//     REMOTE_USER set when it was authenticated. A fetch or push makes a GET of
//     info/refs and then one POST or more, so After=1 moves a fault into the POSTs.
//   - Chunked request bodies (git sends them for POSTs over http.postBuffer) are read
//     into memory before http-backend sees them, since CGI needs a length.
//   - Close stops the server and waits for the requests in progress.
//
// Nothing here needs a *testing.T, so a benchmark or a capture script's helper
// (cmd/gitserve) uses it as a test does.
package gitserver

import (
	"bytes"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
)

// Options configures a Server. The zero value serves every request normally on a free
// port of 127.0.0.1.
type Options struct {
	// Addr is the address to listen on: a loopback host and a port, e.g.
	// "127.0.0.1:38471" when messages must name a stable URL. Empty means
	// "127.0.0.1:0" (a free port).
	Addr string

	// User, when not empty, requires HTTP basic auth with User and Password: any other
	// request gets 401 with a WWW-Authenticate challenge. http-backend then runs with
	// REMOTE_USER=User, which also lets it accept pushes.
	User, Password string

	// FailStatus, when not zero, is the HTTP status (500, 429, 404, ...) answered
	// instead of serving: to every request when FailFirst is 0, else to the first
	// FailFirst requests only.
	FailStatus int
	FailFirst  int

	// RetryAfter, when not empty, is sent as the Retry-After header of the injected
	// FailStatus answers (e.g. "1" with 429 or 503).
	RetryAfter string

	// HangUp closes the connection of each of the first HangUp requests without
	// writing any response.
	HangUp int

	// After spares the first After requests from HangUp and FailStatus, which then
	// count from request After+1 (User still applies to every request).
	After int

	// ReceivePack lets http-backend accept pushes from unauthenticated requests
	// (http.receivepack=true through GIT_CONFIG_COUNT; Env must not set that too).
	ReceivePack bool

	// Env is added to http-backend's environment; an entry overrides a default of
	// the same name (e.g. HOME, GIT_CONFIG_NOSYSTEM).
	Env []string

	// Stderr receives http-backend's stderr and the CGI host's errors; nil discards
	// them.
	Stderr io.Writer
}

// Server is a running smart-HTTP git server. Its methods are safe for concurrent use.
type Server struct {
	ts       *httptest.Server
	opts     Options
	cgi      cgi.Handler
	requests atomic.Int64
}

// Start serves the bare repositories under root with the git binary at gitPath (whose
// exec path must hold git-http-backend, as every git build does).
func Start(gitPath, root string, opts Options) (*Server, error) {
	if gitPath == "" {
		return nil, errors.New("gitserver: no git binary given")
	}
	root, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("gitserver: %w", err)
	}
	addr := opts.Addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("gitserver: address %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("gitserver: address %q is not a loopback address", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("gitserver: %w", err)
	}
	env := []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1", "GIT_CONFIG_NOSYSTEM=1"}
	if opts.ReceivePack {
		env = append(env, "GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=http.receivepack", "GIT_CONFIG_VALUE_0=true")
	}
	stderr := opts.Stderr
	if stderr == nil {
		stderr = io.Discard
	}
	s := &Server{
		opts: opts,
		cgi: cgi.Handler{
			Path:   gitPath,
			Args:   []string{"http-backend"},
			Dir:    root,
			Env:    append(env, opts.Env...),
			Stderr: stderr,
		},
	}
	s.ts = &httptest.Server{
		Listener: ln,
		Config:   &http.Server{Handler: http.HandlerFunc(s.serve)},
	}
	s.ts.Start()
	return s, nil
}

// BaseURL is the server's root URL, "http://127.0.0.1:<port>", without a final slash.
func (s *Server) BaseURL() string { return s.ts.URL }

// URL is the clone URL of repo, a path relative to the served root ("r.git").
func (s *Server) URL(repo string) string {
	return s.ts.URL + "/" + strings.TrimLeft(filepath.ToSlash(repo), "/")
}

// Requests is the number of requests received so far, faulted ones included.
func (s *Server) Requests() int { return int(s.requests.Load()) }

// Close stops the server and waits for the requests in progress to finish.
func (s *Server) Close() { s.ts.Close() }

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	n := int(s.requests.Add(1))
	o := &s.opts
	if m := n - o.After; m > 0 {
		if m <= o.HangUp {
			hangUp(w)
			return
		}
		if o.FailStatus != 0 && (o.FailFirst == 0 || m <= o.FailFirst) {
			if o.RetryAfter != "" {
				w.Header().Set("Retry-After", o.RetryAfter)
			}
			http.Error(w, fmt.Sprintf("gitserver: injected failure of request %d", n), o.FailStatus)
			return
		}
	}
	h := s.cgi
	if o.User != "" {
		user, pass, ok := r.BasicAuth()
		if !ok || !equal(user, o.User) || !equal(pass, o.Password) {
			w.Header().Set("WWW-Authenticate", `Basic realm="gitserver"`)
			http.Error(w, "gitserver: authentication required", http.StatusUnauthorized)
			return
		}
		h.Env = append(h.Env[:len(h.Env):len(h.Env)], "REMOTE_USER="+user)
	}
	if len(r.TransferEncoding) > 0 && r.TransferEncoding[0] == "chunked" {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, "gitserver: reading the request body: "+err.Error(), http.StatusBadRequest)
			return
		}
		r.TransferEncoding = nil
		r.ContentLength = int64(len(body))
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	h.ServeHTTP(w, r)
}

// hangUp closes the request's connection without writing a byte of response.
func hangUp(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			conn.Close()
			return
		}
	}
	// Not hijackable: aborting the handler also closes the connection unanswered.
	panic(http.ErrAbortHandler)
}

func equal(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }
