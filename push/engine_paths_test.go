package push

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/refretry/refretry/failure"
	"github.com/refretry/refretry/internal/harness/capture"
	"github.com/refretry/refretry/internal/harness/fakegit/fakegittest"
	"github.com/refretry/refretry/internal/harness/testutil"
	"github.com/refretry/refretry/retry"
	"github.com/refretry/refretry/settings"
)

// The engine-path tests run `git push --porcelain origin main` through a Runner whose
// git is the fake (internal/harness/fakegit). There is no committed corpus of push
// captures, so each test first makes the failure happen with the real git (a lock
// held on the server, a hook that declines, a remote that moved) and captures what
// git printed; then, the cause removed or kept, the fake replays that capture for
// the first pushes and hands the later ones to the real git. The retry loop runs on
// a clock that never sleeps, under fakegittest.Policy.

// pushArgs are the caller's arguments; pushGit is the push the Runner runs for them.
var (
	pushArgs = []string{"--porcelain", "origin", "main"}
	pushGit  = append([]string{"push", "--porcelain", "--atomic"}, pushArgs...)
)

// pushRepos is a bare server, a work tree whose origin it is, and the fake git.
type pushRepos struct {
	git     testutil.Git
	backend string
	root    string
	server  string
	work    string
	env     []string
	fake    *fakegittest.Fake
}

func newPushRepos(t *testing.T, bin string, g testutil.Git, backend string) *pushRepos {
	t.Helper()
	root := t.TempDir()
	p := &pushRepos{git: g, backend: backend, root: root, server: filepath.Join(root, "remote.git"),
		work: filepath.Join(root, "work"), env: testutil.NoMaintenanceEnv(t, root)}
	p.gitIn(t, root, "init", "-q", "--bare", "-b", "main", "--ref-format="+backend, p.server)
	p.gitIn(t, root, "init", "-q", "-b", "main", p.work)
	p.gitIn(t, p.work, "remote", "add", "origin", p.server)
	p.commit(t, p.work, "a")
	p.gitIn(t, p.work, "push", "-q", "origin", "main")
	p.fake = fakegittest.New(t, bin, g.Path)
	p.fake.Command = "push"
	return p
}

func (p *pushRepos) gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(p.git.Path, args...)
	cmd.Dir, cmd.Env = dir, p.env
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			out = ee.Stderr
		}
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// commit adds a commit that creates file in the work tree dir, and returns its oid.
func (p *pushRepos) commit(t *testing.T, dir, file string) string {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, file), []byte(file+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p.gitIn(t, dir, "add", file)
	p.gitIn(t, dir, "commit", "-q", "-m", "add "+file)
	return p.gitIn(t, dir, "rev-parse", "HEAD")
}

// serverMain is the server's main.
func (p *pushRepos) serverMain(t *testing.T) string {
	t.Helper()
	return p.gitIn(t, p.server, "rev-parse", "refs/heads/main")
}

// capture runs the Runner's push once with the real git, which must exit 1, and makes
// the first times pushes through the fake replay what it printed.
func (p *pushRepos) capture(t *testing.T, times int) capture.Capture {
	t.Helper()
	path := filepath.Join(p.root, "push.txtar")
	fakegittest.Capture(t, path, p.git.Path, p.work, p.env, 1, pushGit...)
	c, err := capture.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	p.fake.Fixture, p.fake.Times = path, times
	return c
}

// hold creates the server's lock for main, as a writer holds it, and returns a
// function that removes it.
func (p *pushRepos) hold(t *testing.T) (release func()) {
	t.Helper()
	lock := filepath.Join(p.server, "refs", "heads", "main.lock")
	if p.backend == "reftable" {
		lock = filepath.Join(p.server, "reftable", "tables.list.lock")
	}
	if err := os.WriteFile(lock, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return func() { os.Remove(lock) }
}

// pushResult is what one Run did.
type pushResult struct {
	code           int
	err            error
	stdout, stderr string
	notes          []string
	attempts       *fakegittest.Attempts
	clock          *fakegittest.Clock
}

// run pushes main through the fake git under policy.
func (p *pushRepos) run(t *testing.T, policy retry.Policy, rebase bool) pushResult {
	t.Helper()
	res := pushResult{attempts: &fakegittest.Attempts{}, clock: fakegittest.NewClock()}
	r := &Runner{
		Config: settings.Config{
			Git:       p.fake.Bin,
			Dirs:      []string{p.work},
			Env:       p.fake.Env(p.env),
			Settings:  func() (settings.Settings, error) { return settings.Settings{Policy: policy}, nil },
			OnAttempt: res.attempts.Record,
			Note:      func(kind, msg string) { res.notes = append(res.notes, kind+": "+msg) },
			Clock:     res.clock,
			Rand:      fakegittest.Rand,
		},
		Rebase: rebase,
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var stdout, stderr strings.Builder
	out, err := r.Run(ctx, pushArgs, nil, &stdout, &stderr)
	res.code, res.err, res.stdout, res.stderr = out.ExitCode, err, stdout.String(), stderr.String()
	if n := len(res.attempts.List()); out.Attempts != n {
		t.Errorf("Result.Attempts %d, but OnAttempt was called %d times", out.Attempts, n)
	}
	return res
}

// TestEnginePaths drives Runner through the engine's paths with the fake git: a
// server lock is retried after the policy's waits, a push behind the remote is
// rebased and pushed again at once, a spent budget gives up with the last failure,
// and a final failure is not retried.
func TestEnginePaths(t *testing.T) {
	t.Parallel()
	bin := fakegittest.Build(t, t.TempDir())
	g := testutil.NewGit(t)
	t.Run("LockRetried", func(t *testing.T) { t.Parallel(); testPushLockRetried(t, bin, g) })
	t.Run("BehindRebased", func(t *testing.T) { t.Parallel(); testPushBehindRebased(t, bin, g) })
	t.Run("GaveUp", func(t *testing.T) { t.Parallel(); testPushGaveUp(t, bin, g) })
	t.Run("Final", func(t *testing.T) { t.Parallel(); testPushFinal(t, bin, g) })
}

// testPushLockRetried: the server's lock was held for the first two pushes; the loop
// waits as the policy says and pushes again, and the caller gets the successful
// push's porcelain only.
func testPushLockRetried(t *testing.T, bin string, g testutil.Git) {
	for _, backend := range []string{"files", "reftable"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			p := newPushRepos(t, bin, g, backend)
			head := p.commit(t, p.work, "b")
			release := p.hold(t)
			p.capture(t, 2)
			release()
			r := p.run(t, fakegittest.Policy(), false)
			if r.code != 0 || r.err != nil {
				t.Fatalf("exit %d, err %v\nstdout:\n%s\nstderr:\n%s", r.code, r.err, r.stdout, r.stderr)
			}
			for _, a := range r.attempts.List()[:2] {
				var e *failure.Error
				if !errors.As(a.Err, &e) || e.Lock == nil || !e.Lock.Remote {
					t.Errorf("attempt %d: %v, want a lock on the remote", a.Number, a.Err)
				}
			}
			if strings.Contains(r.stdout, "rejected") || !strings.HasSuffix(r.stdout, "Done\n") || strings.Contains(r.stderr, "remote: error") {
				t.Errorf("output is not the successful push's:\nstdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
			}
			if got := p.serverMain(t); got != head {
				t.Errorf("server main = %s, want %s", got, head)
			}
			r.attempts.Check(t, r.clock, []failure.Class{failure.LockContention, failure.LockContention, "ok"}, fakegittest.Waits(2))
			if n := p.fake.Calls(t); n != 3 {
				t.Errorf("git push ran %d times, want 3", n)
			}
		})
	}
}

// testPushBehindRebased: another client pushed first, so the push is rejected
// (fetch first); with Rebase the commit is put on the remote's tip and pushed again
// at once: the loop asks the clock for no wait.
func testPushBehindRebased(t *testing.T, bin string, g testutil.Git) {
	p := newPushRepos(t, bin, g, "files")
	other := filepath.Join(p.root, "other")
	p.gitIn(t, p.root, "clone", "-q", p.server, other)
	theirs := p.commit(t, other, "theirs")
	p.gitIn(t, other, "push", "-q", "origin", "main")
	p.commit(t, p.work, "mine")
	p.capture(t, 1)
	r := p.run(t, fakegittest.Policy(), true)
	if r.code != 0 || r.err != nil {
		t.Fatalf("exit %d, err %v\nstdout:\n%s\nstderr:\n%s", r.code, r.err, r.stdout, r.stderr)
	}
	head := p.gitIn(t, p.work, "rev-parse", "HEAD")
	if got := p.serverMain(t); got != head {
		t.Errorf("server main = %s, want the rebased %s", got, head)
	}
	if parent := p.gitIn(t, p.work, "rev-parse", "HEAD^"); parent != theirs {
		t.Errorf("the pushed commit's parent is %s, want the remote's %s", parent, theirs)
	}
	if !slices.ContainsFunc(r.notes, func(n string) bool { return strings.HasPrefix(n, "rebase: rebased ") }) {
		t.Errorf("notes %q, want the rebase", r.notes)
	}
	r.attempts.Check(t, r.clock, []failure.Class{failure.Behind, "ok"}, []time.Duration{0})
	if n := p.fake.Calls(t); n != 2 {
		t.Errorf("git push ran %d times, want 2", n)
	}
}

// testPushGaveUp: the server's lock is never released. The run ends when the budget
// does, by attempts or by the clock's deadline, with the last failure, its output
// byte for byte once, and git's exit code; the server is unchanged.
func testPushGaveUp(t *testing.T, bin string, g testutil.Git) {
	for _, tc := range fakegittest.Budgets() {
		t.Run(tc.Name, func(t *testing.T) {
			t.Parallel()
			p := newPushRepos(t, bin, g, "files")
			first := p.serverMain(t)
			p.commit(t, p.work, "b")
			release := p.hold(t)
			defer release()
			c := p.capture(t, 100)
			r := p.run(t, tc.Policy, false)
			var ex *retry.ExhaustedError
			var e *failure.Error
			if !errors.As(r.err, &ex) || ex.Reason != tc.Reason || ex.Attempts != tc.Attempts ||
				!errors.As(r.err, &e) || e.Class != failure.LockContention {
				t.Fatalf("err %v, want %d attempts of lock contention exhausted (%s)", r.err, tc.Attempts, tc.Reason)
			}
			if r.code != 1 || r.stdout != string(c.Stdout) || r.stderr != string(c.Stderr) {
				t.Errorf("exit %d, stdout:\n%s\nstderr:\n%s\nwant git's last: 1,\n%s\n%s", r.code, r.stdout, r.stderr, c.Stdout, c.Stderr)
			}
			if got := p.serverMain(t); got != first {
				t.Errorf("server main moved to %s", got)
			}
			want := slices.Repeat([]failure.Class{failure.LockContention}, tc.Attempts)
			r.attempts.Check(t, r.clock, want, fakegittest.Waits(tc.Attempts-1))
		})
	}
}

// testPushFinal: a push the server's hook declines, and one behind the remote without
// Rebase, are not retried (the declined push would succeed on a retry here: the hook
// is gone once captured), and git's output and exit code reach the caller byte for
// byte.
func testPushFinal(t *testing.T, bin string, g testutil.Git) {
	t.Run("declined", func(t *testing.T) {
		t.Parallel()
		p := newPushRepos(t, bin, g, "files")
		first := p.serverMain(t)
		p.commit(t, p.work, "b")
		hook := filepath.Join(p.server, "hooks", "pre-receive")
		if err := os.WriteFile(hook, []byte("#!/bin/sh\necho 'policy: main is frozen' >&2\nexit 1\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		c := p.capture(t, 1)
		if err := os.Remove(hook); err != nil {
			t.Fatal(err)
		}
		r := p.run(t, fakegittest.Policy(), false)
		checkFinal(t, r, c, failure.Declined)
		if got := p.serverMain(t); got != first {
			t.Errorf("server main moved to %s: the push was retried", got)
		}
		if n := p.fake.Calls(t); n != 1 {
			t.Errorf("git push ran %d times, want 1", n)
		}
	})
	t.Run("behind", func(t *testing.T) {
		t.Parallel()
		p := newPushRepos(t, bin, g, "files")
		other := filepath.Join(p.root, "other")
		p.gitIn(t, p.root, "clone", "-q", p.server, other)
		theirs := p.commit(t, other, "theirs")
		p.gitIn(t, other, "push", "-q", "origin", "main")
		p.commit(t, p.work, "mine")
		c := p.capture(t, 1)
		r := p.run(t, fakegittest.Policy(), false)
		checkFinal(t, r, c, failure.Behind)
		if got := p.serverMain(t); got != theirs {
			t.Errorf("server main = %s, want theirs %s", got, theirs)
		}
	})
}

// checkFinal checks a run that ended at its first attempt with class, and gave the
// caller git's output and exit code unchanged.
func checkFinal(t *testing.T, r pushResult, c capture.Capture, class failure.Class) {
	t.Helper()
	var e *failure.Error
	var ex *retry.ExhaustedError
	if !errors.As(r.err, &e) || e.Class != class || errors.As(r.err, &ex) {
		t.Fatalf("err %v, want %s, not retried", r.err, class)
	}
	if r.code != 1 || r.stdout != string(c.Stdout) || r.stderr != string(c.Stderr) {
		t.Errorf("exit %d, stdout:\n%s\nstderr:\n%s\nwant git's: 1,\n%s\n%s", r.code, r.stdout, r.stderr, c.Stdout, c.Stderr)
	}
	r.attempts.Check(t, r.clock, []failure.Class{class}, nil)
}
