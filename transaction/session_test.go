package transaction

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
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

// The session tests run `update-ref --stdin` through a Runner whose git is the fake
// (internal/harness/fakegit): its first invocations replay a failure captured from
// real git (testdata/stderr), the later ones are the real git, in a repository where
// refs/heads/x is at A and B is another commit. The retry loop runs on a clock that
// never sleeps, under fakegittest.Policy, so that the waits it asks for are exact.

// sessionRepo is a repository with x at A, and the fake git in front of the real one.
type sessionRepo struct {
	repo *testutil.Repo
	fake *fakegittest.Fake
	A, B string
}

func newSessionRepo(t *testing.T, bin string, g testutil.Git, backend string) *sessionRepo {
	t.Helper()
	r := testutil.NewRepo(t, g, backend)
	s := &sessionRepo{repo: r, fake: fakegittest.New(t, bin, g.Path), A: r.Commit, B: r.NewCommit("B")}
	r.Run("update-ref", "refs/heads/x", s.A)
	s.fake.Repo = r.Dir
	return s
}

// fixture is the capture of case name from this git and backend, and its path.
func (s *sessionRepo) fixture(t *testing.T, name string) (capture.Capture, string) {
	t.Helper()
	v := strings.Split(s.repo.Git.Version, ".")
	path, err := filepath.Abs(filepath.Join("..", "testdata", "stderr", v[0]+"."+v[1]+"-"+s.repo.Backend+"-"+name+".txtar"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := capture.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	return c, path
}

// replay makes the first times update-refs replay the capture of case name, and
// returns the capture as the fake replays it (in this repository).
func (s *sessionRepo) replay(t *testing.T, name string, times int) capture.Capture {
	t.Helper()
	c, path := s.fixture(t, name)
	s.fake.Fixture, s.fake.Times = path, times
	from, to := []byte("/tmp/refretry-fixtures/r/"), []byte(s.repo.Dir+"/")
	c.Stdout, c.Stderr = bytes.ReplaceAll(c.Stdout, from, to), bytes.ReplaceAll(c.Stderr, from, to)
	return c
}

// sessionResult is what one Run did.
type sessionResult struct {
	code           int
	err            error
	stdout, stderr string
	attempts       *fakegittest.Attempts
	clock          *fakegittest.Clock
}

// check checks the attempts' outcomes and the waits the loop asked for.
func (r sessionResult) check(t *testing.T, classes []failure.Class, waits []time.Duration) {
	t.Helper()
	r.attempts.Check(t, r.clock, classes, waits)
}

// run runs update-ref with args and stdin through the fake git under policy.
func (s *sessionRepo) run(t *testing.T, policy retry.Policy, stdin io.Reader, args ...string) sessionResult {
	t.Helper()
	res := sessionResult{attempts: &fakegittest.Attempts{}, clock: fakegittest.NewClock()}
	runner := &Runner{
		Config: settings.Config{
			Git:  s.fake.Bin,
			Dirs: []string{s.repo.Dir},
			Env:  s.fake.Env(s.repo.Env),
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
	out, err := runner.Run(ctx, args, stdin, &stdout, &stderr)
	res.code, res.err, res.stdout, res.stderr = out.ExitCode, err, stdout.String(), stderr.String()
	if n := len(res.attempts.List()); out.Attempts != n {
		t.Errorf("Result.Attempts %d, but OnAttempt was called %d times", out.Attempts, n)
	}
	return res
}

// x is refs/heads/x's value.
func (s *sessionRepo) x(t *testing.T) string {
	t.Helper()
	return s.repo.Run("rev-parse", "refs/heads/x")
}

// TestSession drives the --stdin proxy (session.go) through its retry paths with
// the fake git and a clock that never sleeps.
func TestSession(t *testing.T) {
	t.Parallel()
	bin := fakegittest.Build(t, t.TempDir())
	g := testutil.NewGit(t)
	t.Run("Replay", func(t *testing.T) { t.Parallel(); testSessionReplay(t, bin, g) })
	t.Run("ReplayFile", func(t *testing.T) { t.Parallel(); testSessionReplayFile(t, bin, g) })
	t.Run("Final", func(t *testing.T) { t.Parallel(); testSessionFinal(t, bin, g) })
	t.Run("GaveUp", func(t *testing.T) { t.Parallel(); testSessionGaveUp(t, bin, g) })
	t.Run("Framing", func(t *testing.T) { t.Parallel(); testSessionFraming(t, bin, g) })
	t.Run("NUL", func(t *testing.T) { t.Parallel(); testSessionNUL(t, bin, g) })
}

// testSessionReplay: git fails twice with lock contention at prepare (or at commit,
// without prepare), having answered "start: ok". Each new git receives the whole
// transaction again from the log, from "start" on, as the first did; the third, the
// real git, commits it. The caller sees each "<verb>: ok" once, in order, and nothing
// of the failed attempts; the loop waited twice, as the policy says.
func testSessionReplay(t *testing.T, bin string, g testutil.Git) {
	for _, tc := range []struct {
		backend, fixture string
		verbs            []string // the transaction's commands after its update
	}{
		{"files", "lock-ref-stdin-prepare", []string{"prepare", "commit"}},
		{"files", "lock-ref-stdin-commit", []string{"commit"}},
		{"reftable", "lock-tables-list-stdin-prepare", []string{"prepare", "commit"}},
		{"reftable", "lock-tables-list-stdin-commit", []string{"commit"}},
	} {
		t.Run(tc.backend+"/"+tc.fixture, func(t *testing.T) {
			t.Parallel()
			s := newSessionRepo(t, bin, g, tc.backend)
			s.replay(t, tc.fixture, 2)
			tx := "start\nupdate refs/heads/x " + s.B + " " + s.A + "\n" + strings.Join(tc.verbs, "\n") + "\n"
			r := s.run(t, fakegittest.Policy(), strings.NewReader(tx), "--stdin")
			if r.code != 0 || r.err != nil {
				t.Fatalf("exit %d, err %v\nstderr:\n%s", r.code, r.err, r.stderr)
			}
			want := "start: ok\n"
			for _, v := range tc.verbs {
				want += v + ": ok\n"
			}
			if r.stdout != want || r.stderr != "" {
				t.Errorf("stdout %q (want %q), stderr %q (want none)", r.stdout, want, r.stderr)
			}
			// What each failed git took in: the transaction up to the verb that failed.
			upTo := tx[:strings.Index(tx, tc.verbs[0]+"\n")+len(tc.verbs[0])+1]
			for n := 1; n <= 2; n++ {
				if got := s.fake.Input(t, n); got != upTo {
					t.Errorf("git %d took in %q, want the transaction from its start, %q", n, got, upTo)
				}
			}
			if got := s.x(t); got != s.B {
				t.Errorf("x = %s, want %s: the real git did not get the whole transaction", got, s.B)
			}
			r.check(t, []failure.Class{failure.LockContention, failure.LockContention, "ok"}, fakegittest.Waits(2))
			if n := s.fake.Calls(t); n != 3 {
				t.Errorf("update-ref ran %d times, want 3", n)
			}
		})
	}
}

// testSessionReplayFile: with a regular file on stdin git reads the file itself; a
// retry starts the next git at the beginning of the transaction, not where the failed
// git stopped reading.
func testSessionReplayFile(t *testing.T, bin string, g testutil.Git) {
	s := newSessionRepo(t, bin, g, "files")
	s.replay(t, "lock-ref-stdin-prepare", 1)
	tx := "start\nupdate refs/heads/x " + s.B + " " + s.A + "\nprepare\ncommit\n"
	path := filepath.Join(t.TempDir(), "input")
	if err := os.WriteFile(path, []byte(tx), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := s.run(t, fakegittest.Policy(), f, "--stdin")
	if r.code != 0 || r.err != nil {
		t.Fatalf("exit %d, err %v\nstderr:\n%s", r.code, r.err, r.stderr)
	}
	if want := "start: ok\nprepare: ok\ncommit: ok\n"; r.stdout != want || r.stderr != "" {
		t.Errorf("stdout %q (want %q), stderr %q (want none)", r.stdout, want, r.stderr)
	}
	if got := s.x(t); got != s.B {
		t.Errorf("x = %s, want %s", got, s.B)
	}
	r.check(t, []failure.Class{failure.LockContention, "ok"}, fakegittest.Waits(1))
}

// testSessionFinal: git fails at prepare because x is not at the old value given; a
// final failure is not retried (the real git that a retry would reach would commit,
// here, since x is at the old value), and git's bytes and exit code reach the caller
// unchanged, with nothing of refretry's.
func testSessionFinal(t *testing.T, bin string, g testutil.Git) {
	s := newSessionRepo(t, bin, g, "files")
	c := s.replay(t, "cas-mismatch-stdin-prepare", 1)
	tx := "start\nupdate refs/heads/x " + s.B + " " + s.A + "\nprepare\ncommit\n"
	r := s.run(t, fakegittest.Policy(), strings.NewReader(tx), "--stdin")
	var e *failure.Error
	var ex *retry.ExhaustedError
	if !errors.As(r.err, &e) || e.Class != failure.Conflict || errors.As(r.err, &ex) {
		t.Fatalf("err %v, want the conflict itself", r.err)
	}
	if e.Moved == nil || e.Moved.Ref != "refs/heads/x" {
		t.Errorf("Moved %+v, want refs/heads/x", e.Moved)
	}
	if r.code != 128 || r.stdout != string(c.Stdout) || r.stderr != string(c.Stderr) {
		t.Errorf("exit %d, stdout %q, stderr %q; want git's: 128, %q, %q", r.code, r.stdout, r.stderr, c.Stdout, c.Stderr)
	}
	if got := s.x(t); got != s.A {
		t.Errorf("x = %s: the update was retried and applied", got)
	}
	r.check(t, []failure.Class{failure.Conflict}, nil)
}

// testSessionGaveUp: the lock is never released. The run ends when the budget does,
// by attempts or by time (the clock's: no attempt starts past the deadline), with
// the last failure, git's last output once and its exit code; "start: ok" reached
// the caller once; nothing was applied.
func testSessionGaveUp(t *testing.T, bin string, g testutil.Git) {
	for _, tc := range fakegittest.Budgets() {
		t.Run(tc.Name, func(t *testing.T) {
			t.Parallel()
			s := newSessionRepo(t, bin, g, "files")
			c := s.replay(t, "lock-ref-stdin-prepare", 100)
			tx := "start\nupdate refs/heads/x " + s.B + " " + s.A + "\nprepare\ncommit\n"
			r := s.run(t, tc.Policy, strings.NewReader(tx), "--stdin")
			var ex *retry.ExhaustedError
			var e *failure.Error
			if !errors.As(r.err, &ex) || ex.Reason != tc.Reason || ex.Attempts != tc.Attempts {
				t.Fatalf("err %v, want %d attempts exhausted (%s)", r.err, tc.Attempts, tc.Reason)
			}
			if !errors.As(r.err, &e) || e.Class != failure.LockContention || e.Lock == nil ||
				e.Lock.Path != filepath.Join(s.repo.GitDir, "refs", "heads", "x.lock") {
				t.Fatalf("last failure %#v, want lock contention on x.lock", e)
			}
			if r.code != 128 || r.stdout != "start: ok\n" || r.stderr != string(c.Stderr) {
				t.Errorf("exit %d, stdout %q, stderr %q; want 128, start: ok once, and git's last message %q",
					r.code, r.stdout, r.stderr, c.Stderr)
			}
			if got := s.x(t); got != s.A {
				t.Errorf("x = %s, want it unchanged", got)
			}
			want := slices.Repeat([]failure.Class{failure.LockContention}, tc.Attempts)
			r.check(t, want, fakegittest.Waits(tc.Attempts-1))
		})
	}
}

// testSessionFraming: input git cannot parse reaches git exactly as the caller sent
// it (the proxy holds back a last LF, or a last -z field, until the input ends, and
// must then pass it on as it is), so that git's message and exit code are the ones
// captured from real git for the same input; a parse error is never retried.
func testSessionFraming(t *testing.T, bin string, g testutil.Git) {
	const b = "05d111e482e6d0736ef43a955e349439447142f3" // the fixtures' B; parsing never looks it up
	for _, tc := range []struct {
		fixture, input string
		nul            bool
	}{
		{"parse-unknown-command", "frobnicate refs/heads/x\n", false},
		{"parse-missing-final-lf", "update refs/heads/x " + b, false},
		{"parse-badly-quoted", "update \"refs/heads/x " + b + "\n", false},
		{"parse-z-eof-old-oid", "update refs/heads/x\x00" + b + "\x00", true},
		{"parse-z-text-input", "update refs/heads/x " + b + "\n", true},
	} {
		t.Run(tc.fixture, func(t *testing.T) {
			t.Parallel()
			s := newSessionRepo(t, bin, g, "files")
			c, _ := s.fixture(t, tc.fixture) // not replayed: the real git parses
			args := []string{"--stdin"}
			if tc.nul {
				args = []string{"-z", "--stdin"}
			}
			r := s.run(t, fakegittest.Policy(), strings.NewReader(tc.input), args...)
			var e *failure.Error
			if !errors.As(r.err, &e) || e.Class != failure.InvalidInput {
				t.Errorf("err %v, want invalid input", r.err)
			}
			if want := c.Meta["exit"]; strconv.Itoa(r.code) != want {
				t.Errorf("exit %d, real git's %s", r.code, want)
			}
			if r.stdout != string(c.Stdout) || r.stderr != string(c.Stderr) {
				t.Errorf("stdout %q, stderr %q; real git printed %q, %q", r.stdout, r.stderr, c.Stdout, c.Stderr)
			}
			r.check(t, []failure.Class{failure.InvalidInput}, nil)
		})
	}
}

// testSessionNUL: the -z form. A batch whose commit fails with lock contention is
// given whole to the next git (the proxy's hold-back of the last field released at
// the end of the input); an interactive -z transaction that fails at prepare is
// replayed from its start.
func testSessionNUL(t *testing.T, bin string, g testutil.Git) {
	t.Run("batch", func(t *testing.T) {
		t.Parallel()
		s := newSessionRepo(t, bin, g, "files")
		s.replay(t, "lock-ref-stdin-z", 1)
		in := "update refs/heads/x\x00" + s.B + "\x00" + s.A + "\x00"
		r := s.run(t, fakegittest.Policy(), strings.NewReader(in), "-z", "--stdin")
		if r.code != 0 || r.err != nil || r.stdout != "" || r.stderr != "" {
			t.Fatalf("exit %d, err %v, stdout %q, stderr %q", r.code, r.err, r.stdout, r.stderr)
		}
		if got := s.fake.Input(t, 1); got != in {
			t.Errorf("the failed git took in %q, want all of %q", got, in)
		}
		if got := s.x(t); got != s.B {
			t.Errorf("x = %s, want %s", got, s.B)
		}
		r.check(t, []failure.Class{failure.LockContention, "ok"}, fakegittest.Waits(1))
	})
	t.Run("interactive", func(t *testing.T) {
		t.Parallel()
		s := newSessionRepo(t, bin, g, "files")
		// Captured from text input; git's message at prepare does not depend on the
		// framing, and the fake reads -z input as git does.
		s.replay(t, "lock-ref-stdin-prepare", 1)
		upTo := "start\x00update refs/heads/x\x00" + s.B + "\x00" + s.A + "\x00prepare\x00"
		r := s.run(t, fakegittest.Policy(), strings.NewReader(upTo+"commit\x00"), "-z", "--stdin")
		if r.code != 0 || r.err != nil {
			t.Fatalf("exit %d, err %v\nstderr:\n%s", r.code, r.err, r.stderr)
		}
		if want := "start: ok\nprepare: ok\ncommit: ok\n"; r.stdout != want || r.stderr != "" {
			t.Errorf("stdout %q (want %q), stderr %q", r.stdout, want, r.stderr)
		}
		if got := s.fake.Input(t, 1); got != upTo {
			t.Errorf("the failed git took in %q, want %q", got, upTo)
		}
		if got := s.x(t); got != s.B {
			t.Errorf("x = %s, want %s", got, s.B)
		}
		r.check(t, []failure.Class{failure.LockContention, "ok"}, fakegittest.Waits(1))
	})
}
