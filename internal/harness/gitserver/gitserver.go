// Package gitserver serves bare git repositories over git's smart HTTP protocol, for
// tests, fixture capture and benchmarks. It can answer pushes as GitHub's and GitLab's
// front ends do, and break requests in chosen ways. It is test support, not product.
//
// The contract:
//
//   - Start runs the given git's own http-backend as a CGI program (net/http/cgi)
//     behind an HTTP/1.1 server on a loopback address: git-http-backend from the git's
//     exec path, started as `git http-backend` would start it, without the git between.
//     Every repository under root is served (GIT_PROJECT_ROOT=root,
//     GIT_HTTP_EXPORT_ALL=1); URL(repo) names one. A repository that is not there gets
//     http-backend's own 404.
//   - http-backend runs with GIT_CONFIG_NOSYSTEM=1 and whatever Options.Env adds; its
//     PATH is the git's exec path, as git sets it for the commands it runs, and then
//     Options.Env's PATH or this process's. It inherits the few variables net/http/cgi
//     always passes on, and nothing else of this process's environment.
//   - Faults are injected deterministically, by the number n of the request (1 for the
//     first request the server receives; every request counts, whatever happened to
//     it). The first After requests are spared; for the others, with m = n - After,
//     these are checked in order: m <= HangUp closes the connection without a response;
//     FailStatus answers with that status when FailFirst is 0 or m <= FailFirst;
//     m <= Stall makes the request's answer stall (below). Then, with DownAfterDrop, a
//     receive-pack request (advertisement or POST) answers 503 once a POST has been
//     given a FaultDrop. Then a server with a User answers 401 to any request without
//     exactly those basic-auth credentials. Only a request that passed all of these
//     reaches http-backend, with REMOTE_USER set when it was authenticated. A fetch or
//     push makes a GET of info/refs and then one POST or more, so After=1 moves a fault
//     into the POSTs.
//   - A stalled request is answered in full into memory (a stalled push is applied);
//     its headers and the first half of its body are sent, then nothing until the
//     client goes away or Close is called, and the connection is then closed without
//     ending the answer.
//   - Receive-pack POSTs are also numbered on their own: p is 1 for the first POST to
//     git-receive-pack, and every one counts, whatever happened to it (ReceivePacks).
//     One that got past the faults above is read whole, BeforeReceivePack(p) is called,
//     and then the first of these answers it: a Refusal that names one of its refs
//     (nothing is applied); PushFaults[p] (the real receive-pack runs first when Apply
//     is set); otherwise http-backend, whose answer Options.Forge rewrites.
//   - Answers made here (refusals, FaultCommitRefs, FaultServerError,
//     FaultWorkflowTimeout) are 200 with http-backend's headers, and honour what the
//     client asked for in its first command: side-band-64k or side-band for the
//     messages (without one, messages are lost, as git's are), report-status or
//     report-status-v2 for the per-ref report ("unpack ok", then "ng <ref> <reason>"
//     for every command of the push).
//   - ForgeGit (the zero value) streams http-backend's answer untouched: the client
//     sees git's own bytes. ForgeGitHub and ForgeGitLab read the answer whole, decode
//     its side band (keep-alives, messages split across packets and a report split
//     across packets included), fold the messages listed below into the rejected refs'
//     reasons, and encode it again. An answer with nothing to fold, or one that is not a
//     200, is sent exactly as git wrote it.
//   - A Bypass whose ref a POST names puts its lines before the answer to that POST,
//     whatever made it (git, a forge's rewrite, a refusal or a fault; not a dropped
//     connection), on the client's side band; with a Bypass, git's answer is read
//     whole, as for a forge.
//   - NoKeepAlive closes every connection after one request.
//   - Latency puts a network's round trip in front of everything above
//     (internal/harness/latency): half of it before a request is numbered, half before
//     the first byte of its answer leaves. The zero value adds nothing.
//   - Chunked request bodies (git sends them for POSTs over http.postBuffer) and every
//     receive-pack POST body are read into memory before http-backend sees them, since
//     CGI needs a length and a POST may be answered from its commands.
//   - Close stops the server and waits for the requests in progress; stalled ones end.
//
// Nothing here needs a *testing.T, so a benchmark or a capture script's helper
// (cmd/gitserve) uses it as a test does.
//
// # What the forges print
//
// The forge behaviours are transcribed: the text users reported in public issue
// threads (GitHub repositories, cited as owner/repo#N or repo#N), not captured from the
// forges here. The remote lines are what the server sends on band 2; the client adds
// "remote: " and its padding.
//
//   - GitHub, a lost compare-and-swap (ForgeGitHub): the git message "cannot lock ref
//     '<ref>': is at <X> but expected <Y>" becomes the ref's reason, `[remote rejected]
//     (cannot lock ref 'refs/heads/main': is at <X> but expected <Y>)`, with no remote:
//     line. Transcribed from lionagi#1395, deepagents#3042 and argo-cd#27835.
//   - GitHub, the same shape for a concurrent creation ("reference already exists",
//     fern#15268), a concurrent deletion ("unable to resolve reference '<ref>'", the
//     create-pull-request force-with-lease reports) and a directory/file conflict
//     ("'refs/heads/a' exists; cannot create 'refs/heads/a/b'", w3c/webref#54 and
//     contile#196; git's reftable backend says it without "cannot lock ref", which
//     ForgeGitHub adds) — transcribed. Any other "cannot lock ref '<ref>': <detail>"
//     line of a rejected ref is folded the same way.
//   - GitHub, a failure of its backend under a burst of ref updates (FaultCommitRefs):
//     the message "fatal error in commit_refs" and every ref `[remote rejected]
//     (failure)`; whether the refs were updated is unknown to the client. Transcribed
//     from objectstack#2195 and microsoft/vscode#182679.
//   - GitHub, a 5xx in the ref phase (FaultServerError): the message "Internal Server
//     Error" and every ref `[remote rejected] (Internal Server Error)`. Transcribed from
//     ship-studio#678.
//   - GitHub, a protected branch (GH006, GH006List): "error: GH006: Protected branch
//     update failed for <ref>." then "error: Changes must be made through a pull
//     request." (or an empty line and "- Changes must be made through a pull
//     request."), reason "protected branch hook declined". Transcribed from
//     SageMathOER-CCC/sage-discrete-math#84.
//   - GitHub, a repository ruleset (GH013): "error: GH013: Repository rule violations
//     found for <ref>.", "Review all repository rules at <repo>/rules?ref=<ref, escaped>",
//     "", "- Changes must be made through a pull request.", "", reason "push declined
//     due to repository rule violations". Transcribed from henne49/dbus-opendtu#235.
//   - GitHub, its check of whether a push creates or changes a workflow file running
//     out of time (FaultWorkflowTimeout): no message, and every ref `[remote rejected]
//     (Unable to determine if workflow can be created or updated due to timeout;
//     `workflows` scope may be required.)`; nothing is updated. Seen with tokens that
//     hold the permission, gone on a re-run (cli/cli#13635, aptos-labs/aptos-core#17930),
//     and on every creation of a ref in a repository of 26,000 refs
//     (stablyai/orca#19550) — transcribed.
//   - GitHub, a GitHub App's token without the workflows permission pushing a change
//     to a workflow file (GitHubAppWorkflow): no message, reason `refusing to allow a
//     GitHub App to create or update workflow `<path>` without `workflows`
//     permission`. Transcribed from repo-sync/github-sync#23,
//     peter-evans/create-pull-request#1234 and cpp-linter/cpp-linter-action#318.
//   - GitHub, a push by an actor who may bypass a rule (GitHubBypass): "Bypassed rule
//     violations for <ref>:", "", "- Changes must be made through a pull request.", ""
//     before the rest of the answer, which is what it would be without the rule: a
//     lost race still ends in `(cannot lock ref '<ref>': is at <X> but expected <Y>)`.
//     Transcribed from akuity/kargo#3071 and kernelkit/infix#1610.
//   - GitLab, a compare-and-swap lost in Gitaly after a successful advertisement
//     (ForgeGitLab): a rejected ref whose message is "cannot lock ref '<ref>': is at <X>
//     but expected <Y>" gets the reason "incorrect old value provided" and no remote:
//     line. Transcribed from akuity/kargo#5286. Other lock messages stay git's.
//   - GitLab, a protected branch (GitLabProtected): "GitLab: You are not allowed to push
//     code to protected branches on this project.", reason "pre-receive hook declined"
//     (transcribed from users' public transcripts; no one thread is on record for it).
//
// Which of a multi-ref push's other refs GitHub and GitLab refuse with a policy is not
// in the reports: a Refusal refuses them all, as a declining pre-receive hook does.
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
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/refretry/refretry/internal/gitexec"
	"github.com/refretry/refretry/internal/harness/latency"
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

	// Stall makes each of the first Stall requests (after After, like HangUp) send its
	// headers and the first half of its answer, then nothing until the client gives up
	// or the server is closed. The request itself is served in full (a stalled push is
	// applied).
	Stall int

	// NoKeepAlive closes every connection after one request. With keep-alive, libcurl
	// sends a request again by itself when a reused connection closes unanswered.
	NoKeepAlive bool

	// Forge selects whose front end answers pushes: ForgeGit (git's own receive-pack
	// output, byte for byte), ForgeGitHub or ForgeGitLab (git's answer, rewritten).
	Forge Forge

	// BeforeReceivePack, when set, is called with n before the server acts on the nth
	// receive-pack POST (forwards it, faults it or refuses it): a test moves a ref there
	// to make the server's compare-and-swap fail. It may run concurrently for
	// concurrent pushes; the POST waits for it.
	BeforeReceivePack func(n int)

	// PushFaults replaces the answer to the nth receive-pack POST with PushFaults[n].
	PushFaults map[int]PushFault

	// Refuse lists the refs a forge policy refuses (GH006, GH013, GitLabProtected,
	// GitHubAppWorkflow).
	Refuse []Refusal

	// Bypass lists the rules the pushing actor bypasses (GitHubBypass): every answer
	// to a receive-pack POST that names one of their refs, other than a dropped
	// connection, starts with their lines.
	Bypass []Bypass

	// DownAfterDrop answers 503 to every receive-pack request (advertisement or POST)
	// that arrives once a POST has been given a FaultDrop.
	DownAfterDrop bool

	// Latency delays every request by a round trip, as a forge across a network
	// would: a benchmark's model of one (see internal/harness/latency).
	Latency latency.Delay
}

// PushFault is what the server does with one receive-pack POST instead of answering
// it as git did.
type PushFault struct {
	Kind FaultKind
	// Apply runs the real receive-pack on the POST first, so the refs are updated
	// exactly as git decides and only its answer is lost or replaced. Without it the
	// pack is read and discarded, nothing changes, and the answer is made from the
	// commands of the POST.
	Apply bool
}

// FaultKind is a kind of PushFault.
type FaultKind int

const (
	// FaultDrop closes the connection without answering.
	FaultDrop FaultKind = iota + 1
	// FaultCommitRefs is GitHub's failure of a burst (transcribed): the message
	// "fatal error in commit_refs" and every ref rejected with "failure".
	FaultCommitRefs
	// FaultServerError is GitHub's 5xx in the ref phase (transcribed): the message
	// "Internal Server Error" and every ref rejected with "Internal Server Error".
	FaultServerError
	// FaultWorkflowTimeout is GitHub's check of whether the push creates or changes a
	// workflow file running out of time (transcribed): no message, and every ref
	// rejected with "Unable to determine if workflow can be created or updated due to
	// timeout; `workflows` scope may be required."
	FaultWorkflowTimeout
)

// Server is a running smart-HTTP git server. Its methods are safe for concurrent use.
type Server struct {
	ts       *httptest.Server
	opts     Options
	cgi      cgi.Handler
	requests atomic.Int64
	posts    atomic.Int64 // receive-pack POSTs
	dropped  atomic.Bool  // a FaultDrop has closed its connection
	closing  chan struct{}
	closed   sync.Once
}

// gitExecPath is git's exec path (`git --exec-path`), asked once per git binary. The
// server runs git-http-backend from there itself: `git http-backend` would be one more
// process started for every request.
func gitExecPath(gitPath string) (string, error) {
	if p, ok := execPaths.Load(gitPath); ok {
		return p.(string), nil
	}
	out, err := exec.Command(gitPath, "--exec-path").Output()
	if err != nil {
		return "", fmt.Errorf("gitserver: %s --exec-path: %w", gitPath, err)
	}
	p := strings.TrimSpace(string(out))
	execPaths.Store(gitPath, p)
	return p, nil
}

var execPaths sync.Map

// Start serves the bare repositories under root with the git binary at gitPath (whose
// exec path must hold git-http-backend, as every git build does).
func Start(gitPath, root string, opts Options) (*Server, error) {
	if gitPath == "" {
		return nil, errors.New("gitserver: no git binary given")
	}
	if !opts.Forge.valid() {
		return nil, fmt.Errorf("gitserver: unknown forge %q", opts.Forge)
	}
	for n, f := range opts.PushFaults {
		if n < 1 || f.Kind < FaultDrop || f.Kind > FaultWorkflowTimeout {
			return nil, fmt.Errorf("gitserver: push fault %d: %+v", n, f)
		}
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
	execPath, err := gitExecPath(gitPath)
	if err != nil {
		ln.Close()
		return nil, err
	}
	env = append(env, opts.Env...)
	path := gitexec.Getenv(env, "PATH") // the last entry wins, in cgi.Handler's environment too
	if path == "" {
		path = os.Getenv("PATH")
	}
	s := &Server{
		opts: opts,
		cgi: cgi.Handler{
			Path: filepath.Join(execPath, "git-http-backend"),
			Dir:  root,
			// What git puts first on PATH for the commands it runs, so that
			// http-backend's own `git upload-pack` or `receive-pack` is this git's.
			Env:    gitexec.Setenv(env, "PATH", execPath+string(filepath.ListSeparator)+path),
			Stderr: stderr,
		},
		closing: make(chan struct{}),
	}
	s.ts = &httptest.Server{
		Listener: ln,
		Config:   &http.Server{Handler: opts.Latency.Wrap(http.HandlerFunc(s.serve))},
	}
	s.ts.Config.SetKeepAlivesEnabled(!opts.NoKeepAlive)
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

// ReceivePacks is the number of receive-pack POSTs received so far, faulted ones
// included.
func (s *Server) ReceivePacks() int { return int(s.posts.Load()) }

// Close stops the server and waits for the requests in progress to finish; a stalled
// answer ends then.
func (s *Server) Close() {
	s.closed.Do(func() { close(s.closing) })
	s.ts.Close()
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	n := int(s.requests.Add(1))
	push := r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/git-receive-pack")
	post := 0
	if push {
		post = int(s.posts.Add(1))
	}
	o := &s.opts
	stall := false
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
		stall = m <= o.Stall
	}
	if o.DownAfterDrop && s.dropped.Load() &&
		(push || r.URL.Query().Get("service") == "git-receive-pack") {
		http.Error(w, "gitserver: receive-pack is down after a dropped push", http.StatusServiceUnavailable)
		return
	}
	if stall {
		rec := httptest.NewRecorder()
		s.answer(rec, r, post)
		s.stall(w, r, rec)
		return
	}
	s.answer(w, r, post)
}

// answer serves r, the post-th receive-pack POST when post > 0, past the faults that
// go by request number.
func (s *Server) answer(w http.ResponseWriter, r *http.Request, post int) {
	o := &s.opts
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
	if post == 0 && !(len(r.TransferEncoding) > 0 && r.TransferEncoding[0] == "chunked") {
		h.ServeHTTP(w, r)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "gitserver: reading the request body: "+err.Error(), http.StatusBadRequest)
		return
	}
	r.TransferEncoding = nil
	r.ContentLength = int64(len(body))
	r.Body = io.NopCloser(bytes.NewReader(body))
	if post == 0 {
		h.ServeHTTP(w, r)
		return
	}
	s.receivePack(w, r, &h, post, body)
}

// receivePack answers the post-th receive-pack POST, whose body is body.
func (s *Server) receivePack(w http.ResponseWriter, r *http.Request, h *cgi.Handler, post int, body []byte) {
	o := &s.opts
	if o.BeforeReceivePack != nil {
		o.BeforeReceivePack(post)
	}
	fault, faulted := o.PushFaults[post]
	if o.Forge == ForgeGit && !faulted && len(o.Refuse) == 0 && len(o.Bypass) == 0 {
		h.ServeHTTP(w, r) // git's own answer, streamed as it comes
		return
	}
	q, err := parseRequest(body, r.Header.Get("Content-Encoding"))
	if err != nil {
		// Not a push this package understands: git's answer, untouched.
		h.ServeHTTP(w, r)
		return
	}
	notice := bypassed(o.Bypass, q)
	if len(o.Refuse) > 0 {
		repo := s.ts.URL + strings.TrimSuffix(strings.TrimSuffix(r.URL.Path, "/git-receive-pack"), ".git")
		if answer := refuse(o.Refuse, q, repo); answer != nil {
			writeResult(w, announce(q, notice, answer))
			return
		}
	}
	if faulted {
		if fault.Kind == FaultDrop {
			s.dropped.Store(true)
		}
		if fault.Apply {
			h.ServeHTTP(httptest.NewRecorder(), r) // the push is applied; its answer is lost
		}
		switch fault.Kind {
		case FaultDrop:
			hangUp(w)
		case FaultCommitRefs:
			writeResult(w, announce(q, notice, synthesize(q, []string{commitRefsLine}, nil, commitRefsReason)))
		case FaultServerError:
			writeResult(w, announce(q, notice, synthesize(q, []string{serverErrorLine}, nil, serverErrorReason)))
		case FaultWorkflowTimeout:
			writeResult(w, announce(q, notice, synthesize(q, nil, nil, workflowTimeoutReason)))
		}
		return
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	out := rec.Body.Bytes()
	if rec.Code == http.StatusOK {
		out = announce(q, notice, o.Forge.rewrite(q, out))
	}
	w.Header().Del("Content-Length") // http-backend sends none; the rewrite may change it
	w.WriteHeader(rec.Code)
	w.Write(out)
}

// writeResult sends a receive-pack answer made here, with http-backend's headers.
func writeResult(w http.ResponseWriter, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/x-git-receive-pack-result")
	h.Set("Expires", "Fri, 01 Jan 1980 00:00:00 GMT")
	h.Set("Pragma", "no-cache")
	h.Set("Cache-Control", "no-cache, max-age=0, must-revalidate")
	w.WriteHeader(http.StatusOK)
	w.Write(body)
}

// stall sends rec's headers and the first half of its body, then nothing until the
// client goes away or the server closes, and then closes the connection.
func (s *Server) stall(w http.ResponseWriter, r *http.Request, rec *httptest.ResponseRecorder) {
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.Header().Del("Content-Length")
	w.WriteHeader(rec.Code)
	body := rec.Body.Bytes()
	w.Write(body[:len(body)/2])
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	select {
	case <-r.Context().Done():
	case <-s.closing:
	}
	// Returning would end the answer cleanly, half of it missing; aborting closes the
	// connection as a wedged server's would be.
	panic(http.ErrAbortHandler)
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
