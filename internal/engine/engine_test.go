package engine

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/refretry/refretry/failure"
	"github.com/refretry/refretry/internal/harness/testutil"
	"github.com/refretry/refretry/retry"
	"github.com/refretry/refretry/settings"
)

// fakeClock advances only when the loop sleeps.
type fakeClock struct {
	now    time.Time
	sleeps []time.Duration
}

func (c *fakeClock) Now() time.Time { return c.now }
func (c *fakeClock) Sleep(_ context.Context, d time.Duration) error {
	c.sleeps = append(c.sleeps, d)
	c.now = c.now.Add(d)
	return nil
}

// script is a command whose attempts fail as listed (nil: success), and whose cure,
// when set, is asked about each failure.
type script struct {
	fails    []error
	cure     func(n int, f *failure.Error) (Next, error)
	ran      int
	finalErr error
	renewAt  int             // attempt at which Renew is called
	progress bool            // every attempt reports that the remote moved (Progress)
	starts   []time.Time     // when each attempt started, on clock
	clock    *fakeClock      // when set, attempt n takes took[n-1] on it
	took     []time.Duration // how long each attempt takes
}

func (s *script) Attempt(_ context.Context, a *Attempt) error {
	s.ran++
	if s.clock != nil {
		s.starts = append(s.starts, s.clock.now)
	}
	if s.progress {
		a.Progress()
	}
	if s.clock != nil && s.ran <= len(s.took) {
		s.clock.now = s.clock.now.Add(s.took[s.ran-1])
	}
	if s.renewAt == s.ran {
		a.Renew()
	}
	if s.ran <= len(s.fails) {
		return s.fails[s.ran-1]
	}
	return nil
}

func (s *script) Final(err error) (int, error) {
	s.finalErr = err
	if err != nil {
		return 1, err
	}
	return 0, nil
}

type curing struct{ *script }

func (c curing) Cure(_ context.Context, a *Attempt, f *failure.Error) (Next, error) {
	return c.cure(a.N, f)
}

func policy(attempts int) func() (settings.Settings, error) {
	return func() (settings.Settings, error) {
		return settings.Settings{Policy: retry.Policy{Timeout: time.Minute, MaxAttempts: attempts, InitialDelay: 100 * time.Millisecond,
			MaxDelay: time.Second, Multiplier: 2}}, nil
	}
}

var (
	contention = &failure.Error{Command: "x", Class: failure.LockContention, ExitCode: 128, Message: "cannot lock references"}
	behind     = &failure.Error{Command: "x", Class: failure.Behind, ExitCode: 1, Message: "fetch first"}
)

// TestRun: retryable failures are retried with backoff; a failure a cure put right
// is retried after a pause (none here: the attempts take no time, so the slot is
// zero; TestPauseAfterCure has the pause); a cure that finds the command done ends it with a success that
// runs no git, and the failed attempt stays recorded as it was; a permanent failure
// ends the run after one attempt.
func TestRun(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		s        *script
		cure     func(n int, f *failure.Error) (Next, error)
		code     int
		ran      int
		sleeps   []time.Duration
		attempts []bool // ok per attempt record
	}{
		{"contention, then success", &script{fails: []error{contention, contention}}, nil, 0, 3,
			[]time.Duration{100 * time.Millisecond, 200 * time.Millisecond}, []bool{false, false, true}},
		{"behind, no cure", &script{fails: []error{behind}}, nil, 1, 1, nil, []bool{false}},
		{"behind, cured", &script{fails: []error{behind}},
			func(int, *failure.Error) (Next, error) { return Retry, nil }, 0, 2, []time.Duration{0}, []bool{false, true}},
		{"contention, found done by the cure", &script{fails: []error{contention}},
			func(int, *failure.Error) (Next, error) { return Done, nil }, 0, 1, []time.Duration{0}, []bool{false, true}},
		{"the cure fails", &script{fails: []error{behind}},
			func(int, *failure.Error) (Next, error) { return Stop, errors.New("conflict") }, 1, 1, nil, []bool{false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			clock := &fakeClock{now: time.Unix(0, 0)}
			var records []retry.Attempt
			e := &Engine{Config: settings.Config{Settings: policy(10), Clock: clock, Rand: func() float64 { return 0.5 },
				OnAttempt: func(a retry.Attempt) { records = append(records, a) }}}
			var c Command = tc.s
			if tc.cure != nil {
				tc.s.cure = tc.cure
				c = curing{tc.s}
			}
			code, err := e.Run(context.Background(), c)
			if code != tc.code || tc.s.ran != tc.ran || fmt.Sprint(clock.sleeps) != fmt.Sprint(tc.sleeps) {
				t.Errorf("code %d (err %v), git ran %d times, sleeps %v; want %d, %d, %v", code, err, tc.s.ran, clock.sleeps, tc.code, tc.ran, tc.sleeps)
			}
			var ok []bool
			for _, a := range records {
				ok = append(ok, a.Err == nil)
			}
			if fmt.Sprint(ok) != fmt.Sprint(tc.attempts) {
				t.Errorf("attempt records %v, want %v", ok, tc.attempts)
			}
		})
	}
}

// TestPauseAfterCure: after a cured failure the next attempt waits a random part of a
// window that is one slot (the shortest attempt so far) doubled for each cure, up to
// 32 slots, and never past what the budget leaves for one more attempt.
func TestPauseAfterCure(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	for _, tc := range []struct {
		name    string
		timeout time.Duration
		took    []time.Duration
		rand    float64
		sleeps  []time.Duration
	}{
		{"doubling to 32 slots", time.Hour,
			[]time.Duration{300 * ms, 100 * ms, 200 * ms, 100 * ms, 100 * ms, 100 * ms, 100 * ms, 100 * ms},
			0.5, []time.Duration{150 * ms, 100 * ms, 200 * ms, 400 * ms, 800 * ms, 1600 * ms, 1600 * ms}},
		{"none when the draw is zero", time.Hour, []time.Duration{100 * ms, 100 * ms, 100 * ms}, 0, []time.Duration{0, 0}},
		{"within the budget", 2 * time.Second,
			[]time.Duration{500 * ms, 500 * ms, 500 * ms}, 0.99, []time.Duration{495 * ms, 5 * ms}}, // 2 s - 1495 ms - one 500 ms attempt
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			clock := &fakeClock{now: time.Unix(0, 0)}
			fails := make([]error, len(tc.took)-1)
			for i := range fails {
				fails[i] = behind
			}
			s := &script{fails: fails, clock: clock, took: tc.took,
				cure: func(int, *failure.Error) (Next, error) { return Retry, nil }}
			e := &Engine{Config: settings.Config{Clock: clock, Rand: func() float64 { return tc.rand },
				Settings: func() (settings.Settings, error) {
					return settings.Settings{Policy: retry.Policy{Timeout: tc.timeout, MaxAttempts: 50, InitialDelay: ms, MaxDelay: ms, Multiplier: 2}}, nil
				}}}
			code, err := e.Run(context.Background(), curing{s})
			if code != 0 || fmt.Sprint(clock.sleeps) != fmt.Sprint(tc.sleeps) {
				t.Errorf("code %d (%v), sleeps %v; want 0, %v", code, err, clock.sleeps, tc.sleeps)
			}
		})
	}
}

// TestRenew: progress during a budget gives a new one when it runs out.
func TestRenew(t *testing.T) {
	t.Parallel()
	s := &script{fails: []error{contention, contention, contention}, renewAt: 2}
	e := &Engine{Config: settings.Config{Settings: policy(2), Clock: &fakeClock{now: time.Unix(0, 0)}}}
	if code, err := e.Run(context.Background(), s); code != 0 || s.ran != 4 {
		t.Errorf("code %d (%v) after %d attempts; want success after 4 (2 + a new budget of 2)", code, err, s.ran)
	}
	s = &script{fails: []error{contention, contention, contention}}
	var ex *retry.ExhaustedError
	if code, err := e.Run(context.Background(), s); code != 1 || s.ran != 2 || !errors.As(err, &ex) {
		t.Errorf("without progress: code %d, err %v after %d attempts; want gave up after 2", code, err, s.ran)
	}
}

// TestProgress: with a budget that counts only the time without progress
// (settings.Ceiling above the timeout), a run whose remote keeps moving goes on past
// its budget, until the ceiling, which no attempt starts after; one whose remote does
// not move ends with its budget; and each says which rule ended it. A ceiling at the
// timeout (a user's own --timeout) keeps the plain deadline.
func TestProgress(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		ceiling  time.Duration
		progress bool
		reason   retry.Reason
		lastBy   time.Duration // the last attempt starts before this
		minRan   int
	}{
		{"the remote moves", 35 * time.Second, true, retry.ReasonCeiling, 35 * time.Second, 8},
		{"the remote stands still", 35 * time.Second, false, retry.ReasonStalled, 10 * time.Second, 2},
		{"a hard timeout", 10 * time.Second, true, retry.ReasonDeadline, 10 * time.Second, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			clock := &fakeClock{now: time.Unix(0, 0)}
			took := make([]time.Duration, 100)
			for i := range took {
				took[i] = 3 * time.Second
			}
			fails := make([]error, 100)
			for i := range fails {
				fails[i] = contention
			}
			s := &script{fails: fails, clock: clock, took: took, progress: tc.progress}
			e := &Engine{Config: settings.Config{Clock: clock, Rand: func() float64 { return 0.5 }, Settings: func() (settings.Settings, error) {
				return settings.Settings{Ceiling: tc.ceiling, Policy: retry.Policy{Timeout: 10 * time.Second, MaxAttempts: 50,
					InitialDelay: 100 * time.Millisecond, MaxDelay: time.Second, Multiplier: 2}}, nil
			}}}
			_, err := e.Run(context.Background(), s)
			var ex *retry.ExhaustedError
			if !errors.As(err, &ex) || ex.Reason != tc.reason {
				t.Fatalf("err %v; want it exhausted for %s", err, tc.reason)
			}
			last := s.starts[len(s.starts)-1].Sub(time.Unix(0, 0))
			if s.ran < tc.minRan || last >= tc.lastBy || ex.Elapsed < last {
				t.Errorf("%d attempts, the last starting at %v, elapsed %v; want at least %d, the last before %v",
					s.ran, last, ex.Elapsed, tc.minRan, tc.lastBy)
			}
		})
	}
}

// reapedPID is the pid of a process that has exited and been reaped.
func reapedPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

// TestJudgeLock: a lock whose ~pid.lock names a pid not running here is contention
// while it is younger than the pid grace (a live holder in another pid namespace looks
// the same), with the reason kept for the final advice; past the grace it is stale,
// and with BreakStaleLocks it is removed (a note says so) and the failure becomes
// contention again. A remote lock is never judged.
func TestJudgeLock(t *testing.T) {
	t.Parallel()
	pid := reapedPID(t)
	unseen := fmt.Sprintf("its holder, process %d (from the ~pid.lock file), is not running here", pid)
	cases := []struct {
		name    string
		age     time.Duration
		s       settings.Settings
		class   failure.Class
		removed bool
		advice  string
	}{
		{"young", time.Second, settings.Settings{StaleAfter: 2 * time.Minute}, failure.LockContention, false,
			unseen + ", but the lock is younger than the pid grace of 2m0s, and a live holder in another pid namespace looks the same from here"},
		{"young, breaking", time.Second, settings.Settings{StaleAfter: 2 * time.Minute, BreakStaleLocks: true}, failure.LockContention, false,
			"younger than the pid grace of 2m0s"},
		{"past a short grace", 10 * time.Minute, settings.Settings{StaleAfter: time.Hour, PIDGrace: 5 * time.Minute}, failure.StaleLock, false,
			unseen + ", and the lock is older than the pid grace of 5m0s; make sure no git process is using this repository, then remove it: rm -f"},
		{"past a short grace, breaking", 10 * time.Minute, settings.Settings{StaleAfter: time.Hour, PIDGrace: 5 * time.Minute, BreakStaleLocks: true},
			failure.LockContention, true, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			lock, pidFile := testutil.AgedLock(t, t.TempDir(), tc.age, pid)
			f := &failure.Error{Class: failure.LockContention, Lock: &failure.Lock{Path: lock}}
			var notes []string
			r := &run{Engine: &Engine{Config: settings.Config{Settings: func() (settings.Settings, error) { return tc.s, nil },
				Note: func(kind, msg string) { notes = append(notes, kind+": "+msg) }}}}
			r.judgeLock(f)
			if f.Class != tc.class || testutil.Exists(lock) == tc.removed || testutil.Exists(pidFile) == tc.removed || (len(notes) == 1) != tc.removed {
				t.Fatalf("class %s, lock kept %v, pid file kept %v, notes %q; want %s, removed %v", f.Class, testutil.Exists(lock), testutil.Exists(pidFile), notes, tc.class, tc.removed)
			}
			if tc.removed {
				if want := "stale-lock-removed: removed stale lock '" + lock + "' and '" + pidFile + "'"; !strings.HasPrefix(notes[0], want) {
					t.Errorf("note %q, want it to start %q", notes[0], want)
				}
				return
			}
			if !strings.Contains(f.Advice, tc.advice) || !strings.Contains(f.Advice, fmt.Sprintf("holder pid %d", pid)) || !f.Lock.HolderUnseen {
				t.Errorf("advice %q (unseen %v): want the holder pid and %q", f.Advice, f.Lock.HolderUnseen, tc.advice)
			}
		})
	}
	lock, _ := testutil.AgedLock(t, t.TempDir(), time.Hour, 0)
	f := &failure.Error{Class: failure.LockContention, Lock: &failure.Lock{Path: lock, Remote: true}}
	r := &run{Engine: &Engine{Config: settings.Config{Settings: func() (settings.Settings, error) {
		return settings.Settings{StaleAfter: time.Minute, BreakStaleLocks: true}, nil
	}}}}
	if r.judgeLock(f); f.Class != failure.LockContention || !testutil.Exists(lock) || f.Lock.Age != 0 {
		t.Errorf("a remote lock was judged: %+v", f.Lock)
	}
}

// TestRefusedGrace: a run whose attempts all found nothing listening at the remote
// ends once RefusedGrace has passed, with advice naming the URL and port as the
// likely cause, instead of retrying for its whole budget; a run that reached the
// remote once keeps retrying refused connections (a restart) for the whole budget,
// as it does any other transport failure.
func TestRefusedGrace(t *testing.T) {
	t.Parallel()
	refused := func() *failure.Error {
		return &failure.Error{Command: "push", Class: failure.Transport, ExitCode: 128, Refused: true,
			Message: "fatal: unable to access 'http://127.0.0.1:9/r.git/': Failed to connect to 127.0.0.1 port 9 after 0 ms: Couldn't connect to server"}
	}
	hungUp := &failure.Error{Command: "push", Class: failure.Transport, ExitCode: 128, Message: "fatal: the remote end hung up unexpectedly"}
	many := func(first error) []error {
		fails := []error{first}
		for range 200 {
			fails = append(fails, refused())
		}
		return fails
	}
	for _, tc := range []struct {
		name  string
		fails []error
		early bool // the run ends at the grace, not the budget
	}{
		{"never reached: ends after the grace", many(refused()), true},
		{"reached once: the whole budget", many(hungUp), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			clock := &fakeClock{now: time.Unix(0, 0)}
			took := make([]time.Duration, len(tc.fails))
			for i := range took {
				took[i] = time.Second
			}
			s := &script{fails: tc.fails, clock: clock, took: took}
			e := &Engine{Config: settings.Config{Settings: policy(1000), Clock: clock, Rand: func() float64 { return 0.5 }}}
			code, err := e.Run(context.Background(), s)
			elapsed := clock.now.Sub(time.Unix(0, 0))
			var f *failure.Error
			var ex *retry.ExhaustedError
			if code != 1 || !errors.As(err, &f) {
				t.Fatalf("code %d (%v); want a failure", code, err)
			}
			advised := strings.Contains(f.Advice, "check its URL and port")
			if tc.early {
				// The first attempt to end at or past the grace is the last: at most one
				// attempt (1 s) and one pause (the policy's 1 s cap) past it.
				if elapsed < RefusedGrace || elapsed > RefusedGrace+2*time.Second || errors.As(err, &ex) || !advised {
					t.Errorf("ended after %v (%v), advice %q; want an end within 2 s past %v, before the budget, naming the URL and port",
						elapsed, err, f.Advice, RefusedGrace)
				}
			} else if !errors.As(err, &ex) || ex.Reason != retry.ReasonDeadline || advised {
				t.Errorf("ended after %v (%v), advice %q; want the budget spent, no advice", elapsed, err, f.Advice)
			}
		})
	}
}
