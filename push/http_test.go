package push_test

import (
	"errors"
	"github.com/refretry/refretry/failure"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/refretry/refretry/internal/harness/gitserver"
	"github.com/refretry/refretry/internal/harness/testutil"
	"github.com/refretry/refretry/push"
)

// httpServer serves the server's repository over smart HTTP: the real git
// http-backend of its git version (package gitserver), with opts' faults in front.
func httpServer(t testing.TB, s *server, opts gitserver.Options) *gitserver.Server {
	t.Helper()
	opts.ReceivePack = true
	opts.Env = append(slices.Clone(s.env), opts.Env...)
	srv, err := gitserver.Start(s.git.Path, filepath.Dir(s.dir), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return srv
}

// allHTTPCombos: both client versions against a 2.55 server of either backend, and a
// 2.39 server.
func allHTTPCombos(t *testing.T) []combo {
	old, cur := testutil.SystemGit(t), testutil.NewGit(t)
	return []combo{{cur, cur, "reftable"}, {old, cur, "files"}, {cur, old, "files"}, {old, cur, "reftable"}}
}

// httpCombos are the combos an HTTP test runs (testutil.Cells): all four at the stress
// size; by default 2.55 to 2.39 files and 2.39 to 2.55 reftable, which have each
// client git, each server git and each backend.
func httpCombos(t *testing.T) []combo { return testutil.Cells(t, allHTTPCombos(t), 2, 3) }

// httpSeed is where an HTTP test's clients start: a server whose main a client of it
// pushed over file://. A test makes it once, and each subtest serves a copy of the
// server (server) and pushes from a copy of the client (client): git runs for the
// seed once, not once a subtest.
type httpSeed struct {
	s *server
	c *client
}

func newHTTPSeed(t *testing.T, cb combo) *httpSeed {
	t.Helper()
	s := newServer(t, cb.server, cb.backend)
	c := newClient(t, cb.client, s)
	c.commit("a", "a")
	c.run("push", "-q", "origin", "main")
	return &httpSeed{s, c}
}

// server is a copy of the seed's server, in t's own directory.
func (h *httpSeed) server(t *testing.T) *server {
	t.Helper()
	root := t.TempDir()
	s := &server{t: t, git: h.s.git, backend: h.s.backend, dir: filepath.Join(root, "remote.git"), env: testutil.NoMaintenanceEnv(t, root)}
	if err := os.CopyFS(s.dir, os.DirFS(h.s.dir)); err != nil {
		t.Fatal(err)
	}
	return s
}

// client is a copy of the seed's client whose origin is s (from server) served over
// HTTP with opts' faults; the server starts here, so that opts' faults count from
// the test's own first request.
func (h *httpSeed) client(t *testing.T, s *server, opts gitserver.Options) (*client, *gitserver.Server) {
	t.Helper()
	c := h.c.copy(t)
	srv := httpServer(t, s, opts)
	c.run("remote", "set-url", "origin", srv.URL(filepath.Base(s.dir)))
	if c.serverSide {
		c.run("config", "--unset", "remote.origin.receivepack")
		c.run("config", "--unset", "remote.origin.uploadpack")
		c.serverSide = false
	}
	return c, srv
}

// httpClient is a client, and a server it pushes to over HTTP with opts' faults,
// from a seed of their own (newHTTPSeed).
func httpClient(t *testing.T, cb combo, opts gitserver.Options) (*server, *client, *gitserver.Server) {
	t.Helper()
	h := newHTTPSeed(t, cb)
	s := h.server(t)
	c, srv := h.client(t, s, opts)
	return s, c, srv
}

func TestHTTPUnavailable(t *testing.T) {
	t.Parallel()
	for _, cb := range httpCombos(t) {
		t.Run(cb.name(), func(t *testing.T) {
			t.Parallel()
			// The first 3 requests answer 503.
			s, c, srv := httpClient(t, cb, gitserver.Options{FailStatus: http.StatusServiceUnavailable, FailFirst: 3})
			head := c.commit("b", "b")
			r := c.push(smallPolicy(10), nil, "origin", "main", "main:refs/ci/1")
			// git itself may spend more than one request per attempt.
			got := r.classes()
			if r.code != 0 || len(got) < 2 || got[len(got)-1] != "ok" ||
				slices.ContainsFunc(got[:len(got)-1], func(c failure.Class) bool { return c != failure.Transport }) {
				t.Fatalf("exit %d, attempts %v, want transport failures then success\n%s", r.code, got, r.stderr)
			}
			if left := 3 - srv.Requests(); left > 0 {
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
			// The first request, the advertisement, stalls half-way.
			s, c, _ := httpClient(t, cb, gitserver.Options{Stall: 1})
			head := c.commit("b", "b")
			r := c.push(smallPolicy(5), func(p *push.Runner) {
				push.SetStallFloor(p, 1000, time.Second)
			}, "origin", "main")
			// The stall is one transport failure; on a loaded machine a later attempt
			// may also fall below the floor, and is retried the same way.
			classes := r.classes()
			n := len(classes)
			if r.code != 0 || n < 2 || classes[n-1] != "ok" ||
				slices.ContainsFunc(classes[:n-1], func(c failure.Class) bool { return c != failure.Transport }) {
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
// before the answer. The retry finds the remote at the pushed values. Each case over
// each combo at stress size; by default case i over httpCombos' combo i%2
// (testutil.Cells).
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
	type cell struct {
		cb combo
		tc int // an index into cases
	}
	var cells []cell
	for _, cb := range allHTTPCombos(t) {
		for i := range cases {
			cells = append(cells, cell{cb, i})
		}
	}
	// 2.55 to 2.39 files with cases 0 and 2, 2.39 to 2.55 reftable with case 1.
	for _, cl := range testutil.Cells(t, cells, 6, 10, 8) {
		cb, tc := cl.cb, cases[cl.tc]
		t.Run(cb.name()+"/"+tc.name, func(t *testing.T) {
			t.Parallel()
			// The first receive-pack POST runs to completion, then its connection
			// closes unanswered.
			s, c, srv := httpClient(t, cb, gitserver.Options{NoKeepAlive: !tc.keepAlive, DownAfterDrop: tc.down,
				PushFaults: map[int]gitserver.PushFault{1: {Kind: gitserver.FaultDrop, Apply: true}}})
			base := c.run("rev-parse", "HEAD")
			head := c.commit("b", "b")
			c.run("tag", "-a", "-m", "build", "v1")
			postsAfterFirst := -1
			r := c.push(smallPolicy(4), func(p *push.Runner) {
				afterAttempt(p, 1, func() { postsAfterFirst = -srv.ReceivePacks() })
			}, "--porcelain", "--force-with-lease=main:"+base, "origin", "main", "v1")
			postsAfterFirst += srv.ReceivePacks()
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
			if got, want := r.classes(), []failure.Class{failure.Transport, "ok"}; !slices.Equal(got, want) {
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
	seed := newHTTPSeed(t, cb)
	for name, configure := range configs {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := seed.server(t)
			c, srv := seed.client(t, s, gitserver.Options{Stall: 1})
			url := srv.URL(filepath.Base(s.dir))
			c.commit("b", "b")
			env := configure(c, url)
			start := time.Now()
			// A floor of an hour from refretry would hang here; the caller's second wins.
			r := c.push(smallPolicy(3), func(p *push.Runner) {
				p.Env = env
				push.SetStallFloor(p, 1, time.Hour)
			}, "origin", "HEAD:main")
			// Under load the stall may outlast more attempts; the push then ends with
			// its success proved by verification, still exit 0.
			if cs := r.classes(); r.code != 0 || len(cs) < 2 || cs[0] != failure.Transport {
				t.Fatalf("exit %d attempts %v after %v\n%s", r.code, cs, time.Since(start), r.stderr)
			}
		})
	}
}
