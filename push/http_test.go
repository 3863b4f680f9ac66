package push_test

import (
	"errors"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/refretry/refretry/internal/hermetic"
	"github.com/refretry/refretry/internal/testutil"
	"github.com/refretry/refretry/push"
	"github.com/refretry/refretry/retry"
)

// faults says what the HTTP server in front of git http-backend breaks.
type faults struct {
	mu sync.Mutex
	// unavailable answers this many requests with 503 before serving any.
	unavailable int
	// stall sends half of the first ref advertisement, then nothing, until the client
	// gives up.
	stall bool
	// drop applies this many pushes (the receive-pack POST runs to completion) and
	// then closes the connection without answering.
	drop int
	// downAfterDrop answers every later receive-pack request with 503.
	downAfterDrop bool
	// noKeepAlive closes every connection after one request. With keep-alive, libcurl
	// sends a request again by itself when a reused connection closes unanswered.
	noKeepAlive bool

	requests, receivePosts int
	dropped                int
}

// gitHTTP serves the server's repository with the real git http-backend of its git
// version, through net/http/cgi, with the faults injected in front.
type gitHTTP struct {
	*faults
	cgi *cgi.Handler
	t   testing.TB
}

func newGitHTTP(t testing.TB, s *server, f *faults) (url string) {
	t.Helper()
	backend := filepath.Join(gitExecPath(t, s.git), "git-http-backend")
	s.run(s.dir, "config", "http.receivepack", "true")
	h := &gitHTTP{faults: f, t: t, cgi: &cgi.Handler{
		Path: backend,
		Env: append(slices.Clone(s.env),
			"GIT_PROJECT_ROOT="+filepath.Dir(s.dir), "GIT_HTTP_EXPORT_ALL=1"),
	}}
	srv := httptest.NewUnstartedServer(h)
	srv.Config.SetKeepAlivesEnabled(!f.noKeepAlive)
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL + "/" + filepath.Base(s.dir)
}

func gitExecPath(t testing.TB, g testutil.Git) string {
	t.Helper()
	return gitRun(t, g.Path, t.TempDir(), hermetic.Env(os.Environ(), t.TempDir()), "--exec-path")
}

func (h *gitHTTP) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	h.requests++
	receive := strings.HasSuffix(r.URL.Path, "/git-receive-pack") ||
		r.URL.Query().Get("service") == "git-receive-pack"
	post := r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/git-receive-pack")
	if post {
		h.receivePosts++
	}
	switch {
	case h.unavailable > 0:
		h.unavailable--
		h.mu.Unlock()
		http.Error(w, "try later", http.StatusServiceUnavailable)
		return
	case h.stall && r.Method == http.MethodGet:
		h.stall = false
		h.mu.Unlock()
		h.stalled(w, r)
		return
	case post && h.dropped < h.drop:
		h.dropped++
		h.mu.Unlock()
		h.cgi.ServeHTTP(httptest.NewRecorder(), r) // the server applies the push
		hj, ok := w.(http.Hijacker)
		if !ok {
			h.t.Error("cannot hijack the connection")
			return
		}
		conn, _, err := hj.Hijack()
		if err == nil {
			conn.Close()
		}
		return
	case receive && h.downAfterDrop && h.dropped > 0:
		h.mu.Unlock()
		http.Error(w, "down", http.StatusServiceUnavailable)
		return
	}
	h.mu.Unlock()
	h.cgi.ServeHTTP(w, r)
}

// stalled sends the headers and half of the real answer, then nothing.
func (h *gitHTTP) stalled(w http.ResponseWriter, r *http.Request) {
	rec := httptest.NewRecorder()
	h.cgi.ServeHTTP(rec, r)
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.Header().Del("Content-Length")
	w.WriteHeader(rec.Code)
	body := rec.Body.Bytes()
	w.Write(body[:len(body)/2])
	w.(http.Flusher).Flush()
	select {
	case <-r.Context().Done(): // the client gave up
	case <-time.After(2 * time.Minute):
		h.t.Error("the client never gave up on the stalled response")
	}
}

// httpCombos: both client versions against a 2.55 server of either backend, and a
// 2.39 server.
func httpCombos(t *testing.T) []combo {
	old, cur := testutil.SystemGit(t), testutil.NewGit(t)
	return []combo{{cur, cur, "reftable"}, {old, cur, "files"}, {cur, old, "files"}, {old, cur, "reftable"}}
}

// httpClient is a client whose origin is url; it starts with the server's main.
func httpClient(t *testing.T, cb combo, s *server, url string) *client {
	c := newClient(t, cb.client, s)
	c.run("remote", "set-url", "origin", url)
	c.run("config", "--unset", "remote.origin.receivepack")
	c.run("config", "--unset", "remote.origin.uploadpack")
	c.commit("a", "a")
	c.run("push", "-q", "origin", "main")
	return c
}

func TestHTTPUnavailable(t *testing.T) {
	t.Parallel()
	for _, cb := range httpCombos(t) {
		t.Run(cb.name(), func(t *testing.T) {
			t.Parallel()
			s := newServer(t, cb.server, cb.backend)
			f := &faults{}
			c := httpClient(t, cb, s, newGitHTTP(t, s, f))
			head := c.commit("b", "b")
			f.mu.Lock()
			f.unavailable = 3
			f.mu.Unlock()
			r := c.push(smallPolicy(10), nil, "origin", "main", "main:refs/ci/1")
			// git itself may spend more than one request per attempt.
			got := r.classes()
			if r.code != 0 || len(got) < 2 || got[len(got)-1] != "ok" ||
				slices.ContainsFunc(got[:len(got)-1], func(c push.Class) bool { return c != push.ClassTransport }) {
				t.Fatalf("exit %d, attempts %v, want transport failures then success\n%s", r.code, got, r.stderr)
			}
			f.mu.Lock()
			left := f.unavailable
			f.mu.Unlock()
			if left != 0 {
				t.Errorf("%d 503s left unserved", left)
			}
			var te *push.TransportError
			if !errors.As(r.attempts[0].Err, &te) || te.HTTPStatus != 503 {
				t.Errorf("first failure %v, want HTTP 503", r.attempts[0].Err)
			}
			if s.ref("refs/heads/main") != head || s.ref("refs/ci/1") != head {
				t.Errorf("server not updated")
			}
		})
	}
}

// TestHTTPStall: the first advertisement stalls half-way; the stall floor turns it
// into a failure, and the retry succeeds.
func TestHTTPStall(t *testing.T) {
	t.Parallel()
	for _, cb := range httpCombos(t) {
		t.Run(cb.name(), func(t *testing.T) {
			t.Parallel()
			s := newServer(t, cb.server, cb.backend)
			f := &faults{}
			c := httpClient(t, cb, s, newGitHTTP(t, s, f))
			head := c.commit("b", "b")
			f.mu.Lock()
			f.stall = true
			f.mu.Unlock()
			r := c.push(smallPolicy(5), func(p *push.Runner) {
				p.StallFloor = push.StallFloor{Limit: 1000, Time: time.Second}
			}, "origin", "main")
			// The stall is one transport failure; on a loaded machine a later attempt
			// may also fall below the floor, and is retried the same way.
			classes := r.classes()
			n := len(classes)
			if r.code != 0 || n < 2 || classes[n-1] != "ok" ||
				slices.ContainsFunc(classes[:n-1], func(c push.Class) bool { return c != push.ClassTransport }) {
				t.Fatalf("exit %d, attempts %v, want transport failures then ok\n%s", r.code, classes, r.stderr)
			}
			if msg := r.attempts[0].Err.Error(); !strings.Contains(msg, "too slow") {
				t.Errorf("first failure %q is not the stall", msg)
			}
			if s.ref("refs/heads/main") != head {
				t.Errorf("server not updated")
			}
		})
	}
}

// TestHTTPDropAfterApply: the server applies the push, then the connection drops
// before the answer. The retry finds the remote at the pushed values.
func TestHTTPDropAfterApply(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		keepAlive bool // libcurl may send the POST again itself: the outcome varies
		down      bool // receive-pack answers 503 after the drop; ls-remote still works
	}{
		{"retry finds it applied", false, false},
		{"receive-pack down after", false, true},
		{"keep-alive", true, false},
	}
	for _, cb := range httpCombos(t) {
		for _, tc := range cases {
			t.Run(cb.name()+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				s := newServer(t, cb.server, cb.backend)
				f := &faults{noKeepAlive: !tc.keepAlive}
				c := httpClient(t, cb, s, newGitHTTP(t, s, f))
				base := c.run("rev-parse", "HEAD")
				head := c.commit("b", "b")
				c.run("tag", "-a", "-m", "build", "v1")
				f.mu.Lock()
				f.drop, f.downAfterDrop = 1, tc.down
				f.mu.Unlock()
				postsAfterFirst := -1
				r := c.push(smallPolicy(4), func(p *push.Runner) {
					record := p.OnAttempt
					p.OnAttempt = func(a retry.Attempt) {
						record(a)
						if a.Number == 1 {
							f.mu.Lock()
							postsAfterFirst = -f.receivePosts
							f.mu.Unlock()
						}
					}
				}, "--porcelain", "--force-with-lease=main:"+base, "origin", "main", "v1")
				f.mu.Lock()
				postsAfterFirst += f.receivePosts
				f.mu.Unlock()
				if r.code != 0 || r.err != nil {
					t.Fatalf("exit %d, err %v, attempts %v\nstdout:\n%s\nstderr:\n%s", r.code, r.err, r.classes(), r.stdout, r.stderr)
				}
				if s.ref("refs/heads/main") != head || s.ref("refs/tags/v1") != c.run("rev-parse", "v1") {
					t.Errorf("server not at the pushed values")
				}
				for _, line := range []string{"=\trefs/heads/main:refs/heads/main\t[up to date]", "=\trefs/tags/v1:refs/tags/v1\t[up to date]", "Done"} {
					if !strings.Contains(r.stdout, line+"\n") {
						t.Errorf("stdout lacks %q:\n%s", line, r.stdout)
					}
				}
				if tc.keepAlive {
					return
				}
				if got, want := r.classes(), []push.Class{push.ClassTransport, "ok"}; !slices.Equal(got, want) {
					t.Errorf("attempts %v, want %v\n%s", got, want, r.stderr)
				}
				if postsAfterFirst != 0 {
					t.Errorf("%d receive-pack POSTs after the failed attempt: the retry must find the push applied, not send it again", postsAfterFirst)
				}
				if !slices.ContainsFunc(r.notes, func(n string) bool { return strings.Contains(n, "already holds every pushed value") }) {
					t.Errorf("no verification note; notes %q", r.notes)
				}
			})
		}
	}
}

// TestStallFloorOnlyWhenUnset checks that a floor the caller configured in any of
// git's ways is left alone, by letting the stall run into it.
func TestStallFloorOnlyWhenUnset(t *testing.T) {
	t.Parallel()
	cur := testutil.NewGit(t)
	cb := combo{cur, cur, "files"}
	configs := map[string]func(c *client, url string) []string{
		"env": func(c *client, _ string) []string {
			return append(slices.Clone(c.env), "GIT_HTTP_LOW_SPEED_LIMIT=1000", "GIT_HTTP_LOW_SPEED_TIME=1")
		},
		"git config": func(c *client, _ string) []string {
			c.run("config", "http.lowSpeedLimit", "1000")
			c.run("config", "http.lowSpeedTime", "1")
			return c.env
		},
		"url config": func(c *client, url string) []string {
			c.run("config", "http."+url+".lowSpeedTime", "1")
			c.run("config", "http."+url+".lowSpeedLimit", "1000")
			return c.env
		},
		"GIT_CONFIG_PARAMETERS": func(c *client, _ string) []string {
			return append(slices.Clone(c.env), "GIT_CONFIG_PARAMETERS='http.lowspeedlimit'='1000' 'http.lowspeedtime'='1'")
		},
	}
	for name, configure := range configs {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := newServer(t, cur, "files")
			f := &faults{}
			url := newGitHTTP(t, s, f)
			c := httpClient(t, cb, s, url)
			c.commit("b", "b")
			env := configure(c, url)
			f.mu.Lock()
			f.stall = true
			f.mu.Unlock()
			start := time.Now()
			// A floor of an hour from refretry would hang here; the caller's second wins.
			r := c.push(smallPolicy(3), func(p *push.Runner) {
				p.Env = env
				p.StallFloor = push.StallFloor{Limit: 1, Time: time.Hour}
			}, "origin", "HEAD:main")
			// Under load the stall may outlast more attempts; the push then ends with
			// its success proved by verification, still exit 0.
			if cs := r.classes(); r.code != 0 || len(cs) < 2 || cs[0] != push.ClassTransport {
				t.Fatalf("exit %d attempts %v after %v\n%s", r.code, cs, time.Since(start), r.stderr)
			}
		})
	}
}
