// Package fakegittest runs a package's retry tests against the fake git
// (internal/harness/fakegit) standing in front of a real git, on a clock that never
// sleeps. A test builds the fake once (Build), makes a Fake for each run, says which
// capture of real git's output it replays and how many times, and gives the Runner
// under test the fake as its git and Fake.Env as its environment: the first
// invocations of the faked subcommand fail exactly as real git did, the later ones
// are the real git. The Runner's loop runs under Policy, on a Clock and with Rand, so
// that the waits it asks for are exact (Waits), and Attempts records and checks them.
package fakegittest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/txtar"

	"github.com/refretry/refretry/failure"
	"github.com/refretry/refretry/retry"
)

// Build compiles the fake git into dir and returns its path. dir must outlive every
// test that runs the fake: a parent test's t.TempDir() serves its subtests.
func Build(t testing.TB, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "git")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/refretry/refretry/internal/harness/fakegit")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the fake git: %v\n%s", err, out)
	}
	return bin
}

// Fake is one run's fake git: which subcommand fails, replaying which capture, how
// many times. Its fields mean what the fake's REFRETRY_FAKEGIT_* variables do.
type Fake struct {
	Bin     string // the fake git, from Build
	Real    string // the real git it hands over to
	Command string // the subcommand faked and counted; "" means update-ref
	Fixture string // the capture replayed; "" means none: every invocation is the real git
	Times   int    // how many of the first invocations replay it
	// CaptureRepo is where the capture was made ("" means where testdata/stderr's
	// were); Repo, when set, replaces it in the replayed bytes.
	CaptureRepo, Repo string

	dir string // the counter, and a record of each replay's input
}

// New returns a Fake whose state lives in t's temporary directory.
func New(t testing.TB, bin, real string) *Fake {
	t.Helper()
	f := &Fake{Bin: bin, Real: real, dir: t.TempDir()}
	if err := os.Mkdir(filepath.Join(f.dir, "input"), 0o755); err != nil {
		t.Fatal(err)
	}
	return f
}

// Env is base with the fake's settings added.
func (f *Fake) Env(base []string) []string {
	env := append([]string(nil), base...)
	for _, kv := range [][2]string{
		{"REFRETRY_FAKEGIT_REAL", f.Real},
		{"REFRETRY_FAKEGIT_STATE", filepath.Join(f.dir, "count")},
		{"REFRETRY_FAKEGIT_COMMAND", f.Command},
		{"REFRETRY_FAKEGIT_FIXTURE", f.Fixture},
		{"REFRETRY_FAKEGIT_TIMES", strconv.Itoa(f.Times)},
		{"REFRETRY_FAKEGIT_CAPTURE_REPO", f.CaptureRepo},
		{"REFRETRY_FAKEGIT_REPO", f.Repo},
		{"REFRETRY_FAKEGIT_INPUT", filepath.Join(f.dir, "input")},
	} {
		env = append(env, kv[0]+"="+kv[1])
	}
	return env
}

// Calls is how many times the faked subcommand ran, replays included.
func (f *Fake) Calls(t testing.TB) int {
	t.Helper()
	fi, err := os.Stat(filepath.Join(f.dir, "count"))
	if errors.Is(err, os.ErrNotExist) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return int(fi.Size())
}

// Input is the input the nth invocation (from 1) took in while it replayed the
// capture: the commands up to the failing one, or all of it.
func (f *Fake) Input(t testing.TB, n int) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(f.dir, "input", strconv.Itoa(n)))
	if err != nil {
		t.Fatalf("replay %d: %v", n, err)
	}
	return string(b)
}

// Capture runs git once, with args, in dir and env, and writes what it did (stdout,
// stderr, exit code) to path as a capture the fake can replay, stamped with the
// version of git that made it. It fails the test unless git exits with wantExit: a
// capture of the wrong failure would make the replay a lie.
func Capture(t testing.TB, path, git, dir string, env []string, wantExit int, args ...string) {
	t.Helper()
	version, err := exec.Command(git, "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(git, args...)
	var stdout, stderr bytes.Buffer
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = dir, env, &stdout, &stderr
	code := 0
	var ee *exec.ExitError
	if err := cmd.Run(); errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	if code != wantExit {
		t.Fatalf("git %s exited %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, wantExit, &stdout, &stderr)
	}
	header := fmt.Sprintf("command: git %s\ngit: %s\nexit: %d\nnote: captured by the test that replays it\n",
		strings.Join(args, " "), strings.TrimPrefix(strings.TrimSpace(string(version)), "git version "), code)
	ar := &txtar.Archive{Files: []txtar.File{{Name: "stdout", Data: stdout.Bytes()}, {Name: "stderr", Data: stderr.Bytes()}}}
	for _, f := range ar.Files {
		if len(f.Data) > 0 && !bytes.HasSuffix(f.Data, []byte("\n")) {
			header += f.Name + "-no-final-newline: true\n"
		}
	}
	ar.Comment = []byte(header)
	if err := os.WriteFile(path, txtar.Format(ar), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Clock is a retry clock that never sleeps: Sleep advances Now by the duration asked
// for, at once, and records it, so that a test checks the waits the retry loop asked
// for instead of waiting them. Its time starts at a fixed instant.
type Clock struct {
	mu    sync.Mutex
	now   time.Time
	slept []time.Duration
}

// NewClock returns a Clock.
func NewClock() *Clock { return NewClockAt(time.Unix(1_700_000_000, 0)) }

// NewClockAt returns a Clock whose time starts at start: a test whose code compares
// the clock with times that other code takes from the real one (gather's staged ids
// are UUIDv7s, made at the real time) starts it at time.Now().
func NewClockAt(start time.Time) *Clock { return &Clock{now: start} }

// Now is the clock's time: its start plus every wait so far.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Sleep records d and advances the clock by it, unless ctx is done.
func (c *Clock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.slept = append(c.slept, d)
	c.now = c.now.Add(d)
	return nil
}

// Slept is every wait asked for, in order.
func (c *Clock) Slept() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration{}, c.slept...)
}

// Policy is the retry policy the tests run under: ten attempts in a minute, waits
// from 10 ms doubling, with a jitter of 0.5.
func Policy() retry.Policy {
	return retry.Policy{Timeout: time.Minute, MaxAttempts: 10, InitialDelay: 10 * time.Millisecond,
		MaxDelay: time.Second, Multiplier: 2, Jitter: 0.5}
}

// Budget is one way a run's budget ends while its failures stay retryable: the
// policy, the reason the loop gives up, and the attempts it made by then.
type Budget struct {
	Name     string
	Policy   retry.Policy
	Reason   retry.Reason
	Attempts int
}

// Budgets are the two ways Policy's budget can end, each tightened: the attempt cap
// (3 attempts) and the clock's deadline (20 ms: after two attempts 7.5 ms have
// passed and the next wait is 15 ms).
func Budgets() []Budget {
	capped, timed := Policy(), Policy()
	capped.MaxAttempts = 3
	timed.MaxAttempts, timed.Timeout = 0, 20*time.Millisecond
	return []Budget{
		{"attempts", capped, retry.ReasonAttempts, 3},
		{"deadline", timed, retry.ReasonDeadline, 2},
	}
}

// Rand is the loop's random draw: with Policy's jitter, every wait is 3/4 of its
// nominal delay.
func Rand() float64 { return 0.25 }

// Waits are the first n waits Policy asks for, with Rand, after failures the loop
// backs off from.
func Waits(n int) []time.Duration {
	ws := []time.Duration{}
	for d := Policy().InitialDelay; len(ws) < n; d *= 2 {
		ws = append(ws, d*3/4)
	}
	return ws
}

// Attempts records the attempts of a run (its Record is a Runner's OnAttempt).
type Attempts struct {
	mu   sync.Mutex
	list []retry.Attempt
}

// Record adds one attempt.
func (r *Attempts) Record(a retry.Attempt) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.list = append(r.list, a)
}

// List is the attempts recorded.
func (r *Attempts) List() []retry.Attempt {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]retry.Attempt(nil), r.list...)
}

// Classes are the attempts' outcomes, as ClassesOf says.
func (r *Attempts) Classes() []failure.Class { return ClassesOf(r.List()) }

// ClassesOf are attempts' outcomes: a failure's class, "ok" for a success, "?" for an
// error that is not a *failure.Error.
func ClassesOf(attempts []retry.Attempt) []failure.Class {
	var cs []failure.Class
	for _, a := range attempts {
		var e *failure.Error
		switch {
		case a.Err == nil:
			cs = append(cs, "ok")
		case errors.As(a.Err, &e):
			cs = append(cs, e.Class)
		default:
			cs = append(cs, "?")
		}
	}
	return cs
}

// Delays are the waits the loop reported after each attempt but the last.
func (r *Attempts) Delays() []time.Duration {
	ds := []time.Duration{}
	for _, a := range r.List() {
		if !a.Final {
			ds = append(ds, a.Delay)
		}
	}
	return ds
}

// Check checks the attempts' outcomes, the waits the loop reported, and that it
// asked the clock for exactly those.
func (r *Attempts) Check(t testing.TB, clock *Clock, classes []failure.Class, waits []time.Duration) {
	t.Helper()
	if got := r.Classes(); !slices.Equal(got, classes) {
		t.Errorf("attempts %v, want %v", got, classes)
	}
	if got := r.Delays(); !slices.Equal(got, waits) {
		t.Errorf("reported delays %v, want %v", got, waits)
	}
	if got := clock.Slept(); !slices.Equal(got, waits) {
		t.Errorf("waited %v on the clock, want %v", got, waits)
	}
}
