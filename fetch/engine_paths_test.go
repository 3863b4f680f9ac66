package fetch

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
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

// The engine-path tests run `git fetch origin` through a Runner whose git is the fake
// (internal/harness/fakegit): its first fetches replay a failure captured from real
// git (testdata/fetch), the later ones are the real git. The repositories are laid out
// as the captures' were (remote.git and its clone under one directory, main and b3
// moved from A to B since the clone), so the replayed lock paths name this clone's
// locks. The retry loop runs on a clock that never sleeps, under fakegittest.Policy.

// fetchRepos is a bare remote and a clone that is behind it, and the fake git.
type fetchRepos struct {
	git     testutil.Git
	backend string
	root    string // as /tmp/refretry-fetch-fixtures was for the captures
	clone   string
	env     []string
	B       string // the remote's main and b3
	fake    *fakegittest.Fake
}

func newFetchRepos(t *testing.T, bin string, g testutil.Git, backend string) *fetchRepos {
	t.Helper()
	root, builtIn, b := fetchStarts.Copy(t, g.Name()+"/"+backend, func(t testing.TB, root string) string {
		return fetchReposAt(t, g, backend, root).build(t)
	})
	f := fetchReposAt(t, g, backend, root)
	f.B = b
	testutil.Relocate(t, filepath.Join(f.clone, ".git", "config"), builtIn, root)
	f.fake = fakegittest.New(t, bin, g.Path)
	f.fake.Command, f.fake.CaptureRepo, f.fake.Repo = "fetch", "/tmp/refretry-fetch-fixtures", root
	return f
}

// fetchStarts holds the repositories of each git and backend as newFetchRepos hands
// them out: built once per test binary, copied for each test.
var fetchStarts testutil.Starts[string]

func fetchReposAt(t testing.TB, g testutil.Git, backend, root string) *fetchRepos {
	return &fetchRepos{git: g, backend: backend, root: root, clone: filepath.Join(root, "clone"), env: testutil.NoMaintenanceEnv(t, root)}
}

// build makes the repositories under f.root and returns B.
func (f *fetchRepos) build(t testing.TB) string {
	t.Helper()
	root := f.root
	format := "--ref-format=" + f.backend
	src := filepath.Join(root, "src")
	f.gitIn(t, root, "init", "-q", "-b", "main", src)
	f.gitIn(t, src, "commit", "-q", "--allow-empty", "-m", "A")
	f.gitIn(t, src, "branch", "b3")
	f.gitIn(t, root, "clone", "-q", "--bare", format, src, filepath.Join(root, "remote.git"))
	f.gitIn(t, root, "clone", "-q", format, filepath.Join(root, "remote.git"), f.clone)
	f.gitIn(t, src, "commit", "-q", "--allow-empty", "-m", "B")
	b := f.gitIn(t, src, "rev-parse", "HEAD")
	f.gitIn(t, src, "push", "-q", filepath.Join(root, "remote.git"), "main", "main:b3")
	return b
}

func (f *fetchRepos) gitIn(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(f.git.Path, args...)
	cmd.Dir, cmd.Env = dir, f.env
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

// replay makes the first times fetches replay the capture of case name from this git
// and backend, and returns the capture as the fake replays it.
func (f *fetchRepos) replay(t *testing.T, name string, times int) capture.Capture {
	t.Helper()
	v := strings.Split(f.git.Version, ".")
	path, err := filepath.Abs(filepath.Join("..", "testdata", "fetch", v[0]+"."+v[1]+"-"+f.backend+"-"+name+".txtar"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := capture.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	f.fake.Fixture, f.fake.Times = path, times
	from, to := []byte("/tmp/refretry-fetch-fixtures/"), []byte(f.root+"/")
	c.Stdout, c.Stderr = bytes.ReplaceAll(c.Stdout, from, to), bytes.ReplaceAll(c.Stderr, from, to)
	return c
}

// fetchResult is what one Run did.
type fetchResult struct {
	code           int
	err            error
	stdout, stderr string
	attempts       *fakegittest.Attempts
	clock          *fakegittest.Clock
}

// run fetches origin through the fake git under policy.
func (f *fetchRepos) run(t *testing.T, policy retry.Policy) fetchResult {
	t.Helper()
	res := fetchResult{attempts: &fakegittest.Attempts{}, clock: fakegittest.NewClock()}
	p := &Runner{
		Config: settings.Config{
			Git:  f.fake.Bin,
			Dirs: []string{f.clone},
			Env:  f.fake.Env(f.env),
			Settings: func() (settings.Settings, error) {
				return settings.Settings{Policy: policy, StaleAfter: settings.DefaultStaleAfter}, nil
			},
			OnAttempt: res.attempts.Record,
			Clock:     res.clock,
			Rand:      fakegittest.Rand,
		},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	out, err := p.Run(ctx, []string{"origin"}, nil, &stdout, &stderr)
	res.code, res.err, res.stdout, res.stderr = out.ExitCode, err, stdout.String(), stderr.String()
	if n := len(res.attempts.List()); out.Attempts != n {
		t.Errorf("Result.Attempts %d, but OnAttempt was called %d times", out.Attempts, n)
	}
	return res
}

// tracking is the clone's refs/remotes/origin/<branch>.
func (f *fetchRepos) tracking(t *testing.T, branch string) string {
	t.Helper()
	return f.gitIn(t, f.clone, "rev-parse", "refs/remotes/origin/"+branch)
}

// TestEnginePaths drives Runner through the engine's paths with the fake git: a
// failure another fetch can get past is retried after the policy's wait, a spent
// budget gives up with the last failure, and a final failure is not retried.
func TestEnginePaths(t *testing.T) {
	t.Parallel()
	bin := fakegittest.Build(t, t.TempDir())
	g := testutil.NewGit(t)
	t.Run("Retried", func(t *testing.T) { t.Parallel(); testFetchRetried(t, bin, g) })
	t.Run("GaveUp", func(t *testing.T) { t.Parallel(); testFetchGaveUp(t, bin, g) })
	t.Run("Final", func(t *testing.T) { t.Parallel(); testFetchFinal(t, bin, g) })
}

// testFetchRetried: a held lock on a remote-tracking ref, or a lost race with another
// fetch, fails the first fetches; the loop waits as the policy says and fetches again,
// and the real git's fetch updates the refs. The caller gets the successful fetch's
// output only.
func testFetchRetried(t *testing.T, bin string, g testutil.Git) {
	for _, tc := range []struct {
		backend, fixture string
		times            int
		class            failure.Class
		lock             string // the lock the failure names, under the clone's .git
	}{
		{"files", "lock-ref", 2, failure.LockContention, "refs/remotes/origin/b3.lock"},
		{"reftable", "lock-tables-list", 2, failure.LockContention, "reftable/tables.list.lock"},
		{"files", "lost-race", 1, failure.LostRace, ""},
		{"reftable", "lost-race", 1, failure.LostRace, ""},
		// The connectivity check died on refs/doomed/15, which this clone lacks: deleted.
		{"files", "lost-race-ref-deleted", 1, failure.LostRace, ""},
	} {
		t.Run(tc.backend+"/"+tc.fixture, func(t *testing.T) {
			t.Parallel()
			f := newFetchRepos(t, bin, g, tc.backend)
			f.replay(t, tc.fixture, tc.times)
			r := f.run(t, fakegittest.Policy())
			if r.code != 0 || r.err != nil {
				t.Fatalf("exit %d, err %v\nstderr:\n%s", r.code, r.err, r.stderr)
			}
			for _, a := range r.attempts.List()[:tc.times] {
				var e *failure.Error
				if errors.As(a.Err, &e) && tc.lock != "" &&
					(e.Lock == nil || e.Lock.Path != filepath.Join(f.clone, ".git", filepath.FromSlash(tc.lock))) {
					t.Errorf("attempt %d: lock %+v, want the clone's %s", a.Number, e.Lock, tc.lock)
				}
			}
			if strings.Contains(r.stderr, "error:") || strings.Contains(r.stderr, "unable to update local ref") {
				t.Errorf("stderr has a failed attempt's output:\n%s", r.stderr)
			}
			for _, b := range []string{"main", "b3"} {
				if got := f.tracking(t, b); got != f.B {
					t.Errorf("origin/%s = %s, want %s", b, got, f.B)
				}
			}
			want := append(slices.Repeat([]failure.Class{tc.class}, tc.times), "ok")
			r.attempts.Check(t, r.clock, want, fakegittest.Waits(tc.times))
			if n := f.fake.Calls(t); n != tc.times+1 {
				t.Errorf("git fetch ran %d times, want %d", n, tc.times+1)
			}
		})
	}
}

// testFetchGaveUp: the lock is never released. The run ends when the budget does, by
// attempts or by the clock's deadline, with the last failure and its output once,
// and git's exit code.
func testFetchGaveUp(t *testing.T, bin string, g testutil.Git) {
	for _, tc := range fakegittest.Budgets() {
		t.Run(tc.Name, func(t *testing.T) {
			t.Parallel()
			f := newFetchRepos(t, bin, g, "files")
			c := f.replay(t, "lock-ref", 100)
			r := f.run(t, tc.Policy)
			var ex *retry.ExhaustedError
			var e *failure.Error
			if !errors.As(r.err, &ex) || ex.Reason != tc.Reason || ex.Attempts != tc.Attempts ||
				!errors.As(r.err, &e) || e.Class != failure.LockContention {
				t.Fatalf("err %v, want %d attempts of lock contention exhausted (%s)", r.err, tc.Attempts, tc.Reason)
			}
			if want, _ := strconv.Atoi(c.Meta["exit"]); r.code != want || r.stdout != string(c.Stdout) || r.stderr != string(c.Stderr) {
				t.Errorf("exit %d, stdout %q, stderr:\n%s\nwant git's last: exit %d, stdout %q, stderr:\n%s",
					r.code, r.stdout, r.stderr, want, c.Stdout, c.Stderr)
			}
			want := slices.Repeat([]failure.Class{failure.LockContention}, tc.Attempts)
			r.attempts.Check(t, r.clock, want, fakegittest.Waits(tc.Attempts-1))
		})
	}
}

// testFetchFinal: failures another identical fetch cannot get past are not retried
// (the real git, which a retry would reach, would succeed here), and git's output and
// exit code reach the caller byte for byte.
func testFetchFinal(t *testing.T, bin string, g testutil.Git) {
	for _, tc := range []struct {
		fixture string
		class   failure.Class
		has     string // a ref the clone has before the fetch
	}{
		{"rejected-non-ff", failure.Rejected, ""},
		{"not-found-remote", failure.NotFound, ""},
		{"usage-unknown-option", failure.Usage, ""},
		// The connectivity check died on a ref the clone still has: not a deletion
		// under the check, so not retried.
		{"lost-race-ref-deleted", failure.Other, "refs/doomed/15"},
	} {
		t.Run(tc.fixture, func(t *testing.T) {
			t.Parallel()
			f := newFetchRepos(t, bin, g, "files")
			if tc.has != "" {
				f.gitIn(t, f.clone, "update-ref", tc.has, "HEAD")
			}
			c := f.replay(t, tc.fixture, 1)
			r := f.run(t, fakegittest.Policy())
			var e *failure.Error
			var ex *retry.ExhaustedError
			if !errors.As(r.err, &e) || e.Class != tc.class || errors.As(r.err, &ex) {
				t.Fatalf("err %v, want %s, not retried", r.err, tc.class)
			}
			if want, _ := strconv.Atoi(c.Meta["exit"]); r.code != want || r.stdout != string(c.Stdout) || r.stderr != string(c.Stderr) {
				t.Errorf("exit %d, stdout %q, stderr:\n%s\nwant git's: exit %d, stdout %q, stderr:\n%s",
					r.code, r.stdout, r.stderr, want, c.Stdout, c.Stderr)
			}
			r.attempts.Check(t, r.clock, []failure.Class{tc.class}, nil)
			if got := f.gitIn(t, f.clone, "rev-parse", "refs/remotes/origin/main"); got == f.B {
				t.Error("origin/main was updated: the fetch was retried")
			}
		})
	}
}
