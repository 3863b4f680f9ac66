package push_test

import (
	"bytes"
	"context"
	"fmt"
	"github.com/refretry/refretry/failure"
	"github.com/refretry/refretry/internal/harness/fakegit/fakegittest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/refretry/refretry/internal/harness/testutil"
	"github.com/refretry/refretry/push"
	"github.com/refretry/refretry/retry"
	"github.com/refretry/refretry/settings"
)

// server is a bare repository that clients push to over file://.
type server struct {
	t       testing.TB
	git     testutil.Git
	backend string
	dir     string
	env     []string
}

func newServer(t testing.TB, g testutil.Git, backend string) *server {
	t.Helper()
	root := t.TempDir()
	s := &server{t: t, git: g, backend: backend, dir: filepath.Join(root, "remote.git"), env: testutil.NoMaintenanceEnv(t, root)}
	args := []string{"init", "-q", "--bare", "-b", "main"}
	if backend == "reftable" {
		args = append(args, "--ref-format=reftable")
	}
	s.run(root, append(args, s.dir)...)
	return s
}

func (s *server) run(dir string, args ...string) string {
	s.t.Helper()
	return gitRun(s.t, s.git.Path, dir, s.env, args...)
}

// ref returns the server's value of ref, "" if it has none.
func (s *server) ref(name string) string {
	s.t.Helper()
	cmd := exec.Command(s.git.Path, "rev-parse", "-q", "--verify", name)
	cmd.Dir, cmd.Env = s.dir, s.env
	out, _ := cmd.Output()
	return strings.TrimSpace(string(out))
}

// lockPath is the lock a push of ref must take on the server.
func (s *server) lockPath(ref string) string {
	if s.backend == "reftable" {
		return filepath.Join(s.dir, "reftable", "tables.list.lock")
	}
	return filepath.Join(s.dir, filepath.FromSlash(ref)+".lock")
}

// hold creates the lock file, as a writer in the middle of an update holds it, and
// returns a function that removes it.
func (s *server) hold(path string) func() {
	s.t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		s.t.Fatal(err)
	}
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		s.t.Fatal(err)
	}
	var once sync.Once
	return func() { once.Do(func() { os.Remove(path) }) }
}

// serverSide is the command that runs one of the server's programs. The client's git
// exports GIT_EXEC_PATH to what it starts, which would make a server of another
// version run the client's helpers, so it is removed.
func (s *server) serverSide(program string) string {
	return "env -u GIT_EXEC_PATH " + filepath.Join(filepath.Dir(s.git.Path), program)
}

// client is a work tree whose origin is a server.
type client struct {
	t   testing.TB
	git testutil.Git
	dir string
	env []string
	// serverSide says that origin names the server's own programs
	// (remote.origin.receivepack and uploadpack): its git is not the client's.
	serverSide bool
}

// newClient makes a client of s. Where s runs another git than the client's, origin
// runs the server's programs (server.serverSide); where both run the same git, the
// client's git starts that git's own programs, as it does by default, without env in
// front of each.
func newClient(t testing.TB, g testutil.Git, s *server) *client {
	t.Helper()
	root := t.TempDir()
	c := &client{t: t, git: g, dir: filepath.Join(root, "work"), env: testutil.NoMaintenanceEnv(t, root), serverSide: g.Path != s.git.Path}
	gitRun(t, g.Path, root, c.env, "init", "-q", "-b", "main", c.dir)
	c.run("remote", "add", "origin", "file://"+s.dir)
	if c.serverSide {
		c.run("config", "remote.origin.receivepack", s.serverSide("git-receive-pack"))
		c.run("config", "remote.origin.uploadpack", s.serverSide("git-upload-pack"))
	}
	return c
}

// cloneOf makes a client that starts from the server's main.
func cloneOf(t testing.TB, g testutil.Git, s *server) *client {
	t.Helper()
	c := newClient(t, g, s)
	c.run("fetch", "-q", "origin", "main")
	c.run("reset", "-q", "--hard", "FETCH_HEAD")
	return c
}

// copy makes another client as c is now, without starting git: c's work tree and
// repository copied (os.CopyFS) into a directory of its own, with a home of its own.
// The jobs of a test that all start from the same clone are made this way: one clone,
// then copies, not a fetch each.
func (c *client) copy(t testing.TB) *client {
	t.Helper()
	root := t.TempDir()
	d := &client{t: t, git: c.git, dir: filepath.Join(root, "work"), env: testutil.NoMaintenanceEnv(t, root), serverSide: c.serverSide}
	if err := os.CopyFS(d.dir, os.DirFS(c.dir)); err != nil {
		t.Fatal(err)
	}
	return d
}

func (c *client) run(args ...string) string {
	c.t.Helper()
	return gitRun(c.t, c.git.Path, c.dir, c.env, args...)
}

// commit adds a commit that creates file with content, and returns its oid.
func (c *client) commit(file, content string) string {
	c.t.Helper()
	if err := os.WriteFile(filepath.Join(c.dir, file), []byte(content), 0o644); err != nil {
		c.t.Fatal(err)
	}
	c.run("add", file)
	c.run("commit", "-q", "-m", "add "+file)
	return c.run("rev-parse", "HEAD")
}

// commitEach adds a commit per file to branch, as commit(file, content) makes it on
// that branch (the file added, "add <file>", the environment's identity and date),
// all in one git (fast-import) instead of three gits a commit; the index and the work
// tree are left as they were.
func (c *client) commitEach(branch, content string, files ...string) {
	c.t.Helper()
	env := map[string]string{}
	for _, kv := range c.env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	ident := func(who string) string {
		return fmt.Sprintf("%s <%s> %s", env["GIT_"+who+"_NAME"], env["GIT_"+who+"_EMAIL"], env["GIT_"+who+"_DATE"])
	}
	var in strings.Builder
	for i, file := range files {
		msg := "add " + file + "\n"
		fmt.Fprintf(&in, "commit refs/heads/%s\nauthor %s\ncommitter %s\ndata %d\n%s", branch, ident("AUTHOR"), ident("COMMITTER"), len(msg), msg)
		if i == 0 {
			fmt.Fprintf(&in, "from refs/heads/%s^0\n", branch)
		}
		fmt.Fprintf(&in, "M 100644 inline %s\ndata %d\n%s\n", file, len(content), content)
	}
	cmd := exec.Command(c.git.Path, "fast-import", "--quiet")
	cmd.Dir, cmd.Env, cmd.Stdin = c.dir, c.env, strings.NewReader(in.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		c.t.Fatalf("git fast-import: %v\n%s", err, out)
	}
}

func gitRun(t testing.TB, git, dir string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command(git, args...)
	cmd.Dir, cmd.Env = dir, env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", git, strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

// run is one Runner run and what it left behind.
type run struct {
	code           int
	err            error
	stdout, stderr string
	attempts       []retry.Attempt
	notes          []string
	report         push.Report
}

func (r run) classes() []failure.Class { return fakegittest.ClassesOf(r.attempts) }

// instantClock advances time on Sleep without sleeping, so retries run at once.
type instantClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *instantClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.now.IsZero() {
		c.now = time.Now()
	}
	return c.now
}

func (c *instantClock) Sleep(ctx context.Context, d time.Duration) error {
	c.Now()
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
	return ctx.Err()
}

// pusher returns a Runner for c with a small, fast policy; configure may adjust it.
func (c *client) pusher(policy retry.Policy, configure func(*push.Runner)) (*push.Runner, *run) {
	r := &run{}
	var mu sync.Mutex
	p := &push.Runner{
		Config: settings.Config{
			Git:       c.git.Path,
			Dirs:      []string{c.dir},
			Env:       c.env,
			Settings:  func() (settings.Settings, error) { return settings.Settings{Policy: policy}, nil },
			OnAttempt: func(a retry.Attempt) { mu.Lock(); r.attempts = append(r.attempts, a); mu.Unlock() },
			Note:      func(_, m string) { mu.Lock(); r.notes = append(r.notes, m); mu.Unlock() },
			Clock:     &instantClock{},
		},
	}
	if configure != nil {
		configure(p)
	}
	return p, r
}

// afterAttempt makes p run f when its attempt number n has ended, after recording the
// attempt as before.
func afterAttempt(p *push.Runner, n int, f func()) {
	record := p.OnAttempt
	p.OnAttempt = func(a retry.Attempt) {
		record(a)
		if a.Number == n {
			f()
		}
	}
}

// push runs a Runner for c with args, ending it a minute after the policy's budget
// (two minutes without one) if it has not ended by itself.
func (c *client) push(policy retry.Policy, configure func(*push.Runner), args ...string) run {
	c.t.Helper()
	p, r := c.pusher(policy, configure)
	guard := 2 * time.Minute
	if policy.Timeout > 0 {
		guard = policy.Timeout + time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	var out, errOut bytes.Buffer
	res, err := p.Run(ctx, args, nil, &out, &errOut)
	r.code, r.err, r.report = res.ExitCode, err, res.Report
	r.stdout, r.stderr = out.String(), errOut.String()
	return *r
}

func smallPolicy(attempts int) retry.Policy {
	return retry.Policy{Timeout: time.Minute, MaxAttempts: attempts, InitialDelay: time.Millisecond,
		MaxDelay: 20 * time.Millisecond, Multiplier: 2, Jitter: 0.5}
}

// combo is a client git and a server git with its ref backend.
type combo struct {
	client  testutil.Git
	server  testutil.Git
	backend string
}

func (c combo) name() string {
	return "client-" + c.client.Name() + "/server-" + c.server.Name() + "-" + c.backend
}

// allCombos are git 2.39 and 2.55 on either side, files on both, reftable on 2.55
// servers, in this order: 0 2.39 to 2.39 files, 1 2.39 to 2.55 files, 2 2.39 to 2.55
// reftable, 3 2.55 to 2.39 files, 4 2.55 to 2.55 files, 5 2.55 to 2.55 reftable.
func allCombos(t *testing.T) []combo {
	old, cur := testutil.SystemGit(t), testutil.NewGit(t)
	var cs []combo
	for _, cl := range []testutil.Git{old, cur} {
		cs = append(cs, combo{cl, old, "files"}, combo{cl, cur, "files"}, combo{cl, cur, "reftable"})
	}
	return cs
}

// combos are the combos a matrix test runs (testutil.Cells): all six at the stress
// size; by default 2 (a 2.39 client, a 2.55 reftable server) and 3 (a 2.55 client, a
// 2.39 files server), which between them have each client git, each server git and
// each backend, and both cross the versions.
func combos(t *testing.T) []combo { return testutil.Cells(t, allCombos(t), 2, 3) }
