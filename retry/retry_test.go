package retry_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/refretry/refretry/retry"
)

// fakeClock advances only when the loop sleeps or an operation says it took time.
type fakeClock struct {
	now    time.Time
	sleeps []time.Duration
	cancel func() // called on the n-th sleep when set
	at     int
}

func (c *fakeClock) Now() time.Time { return c.now }

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	c.sleeps = append(c.sleeps, d)
	if c.cancel != nil && len(c.sleeps) == c.at {
		c.cancel()
		return ctx.Err()
	}
	c.now = c.now.Add(d)
	return nil
}

var (
	errBusy = errors.New("busy")
	errBad  = errors.New("bad")
)

func retryable(err error) bool { return errors.Is(err, errBusy) }

func policy() retry.Policy {
	return retry.Policy{
		Timeout:      10 * time.Second,
		MaxAttempts:  6,
		InitialDelay: 100 * time.Millisecond,
		MaxDelay:     400 * time.Millisecond,
		Multiplier:   2,
		Jitter:       0,
	}
}

// failing returns an operation that fails with errs[i] on attempt i+1 and succeeds after.
func failing(clock *fakeClock, took time.Duration, errs ...error) (func(context.Context, int) error, *int) {
	calls := 0
	return func(_ context.Context, n int) error {
		calls++
		clock.now = clock.now.Add(took)
		if n <= len(errs) {
			return errs[n-1]
		}
		return nil
	}, &calls
}

func TestDo(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		policy     func(*retry.Policy)
		took       time.Duration
		errs       []error
		wantCalls  int
		wantSleeps []time.Duration
		wantErr    error
		wantReason retry.Reason
	}{
		{name: "first try", wantCalls: 1},
		{
			name: "transient then success", errs: []error{errBusy, errBusy},
			wantCalls: 3, wantSleeps: []time.Duration{100 * time.Millisecond, 200 * time.Millisecond},
		},
		{name: "permanent stops at once", errs: []error{errBad}, wantCalls: 1, wantErr: errBad},
		{
			name: "permanent after transient", errs: []error{errBusy, errBad},
			wantCalls: 2, wantSleeps: []time.Duration{100 * time.Millisecond}, wantErr: errBad,
		},
		{
			name: "attempt cap, no sleep after the last", errs: []error{errBusy, errBusy, errBusy, errBusy, errBusy, errBusy, errBusy},
			wantCalls: 6, wantErr: errBusy, wantReason: retry.ReasonAttempts,
			wantSleeps: []time.Duration{100, 200, 400, 400, 400}, /* ms, scaled below */
		},
		{
			name:   "deadline stops before a sleep that would pass it",
			policy: func(p *retry.Policy) { p.Timeout = time.Second; p.MaxAttempts = 0 },
			took:   50 * time.Millisecond, errs: []error{errBusy, errBusy, errBusy, errBusy, errBusy},
			// attempts end at 50, 200, 450, 900 ms; 900+400 > 1000, so 4 attempts and 3 sleeps.
			wantCalls: 4, wantErr: errBusy, wantReason: retry.ReasonDeadline,
			wantSleeps: []time.Duration{100, 200, 400},
		},
		{
			name:   "a slow attempt is not cut short by the deadline",
			policy: func(p *retry.Policy) { p.Timeout = time.Second; p.MaxAttempts = 0 },
			took:   5 * time.Second, errs: []error{errBusy},
			wantCalls: 1, wantErr: errBusy, wantReason: retry.ReasonDeadline,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			clock := &fakeClock{now: time.Unix(1000, 0)}
			p := policy()
			if tc.policy != nil {
				tc.policy(&p)
			}
			op, calls := failing(clock, tc.took, tc.errs...)
			var seen []retry.Attempt
			r := &retry.Retrier{Policy: p, Retryable: retryable, Clock: clock,
				OnAttempt: func(a retry.Attempt) { seen = append(seen, a) }}
			err := r.Do(context.Background(), op)

			if *calls != tc.wantCalls || len(seen) != tc.wantCalls || seen[len(seen)-1].Number != tc.wantCalls {
				t.Fatalf("calls=%d reported=%d, want %d", *calls, len(seen), tc.wantCalls)
			}
			if !seen[len(seen)-1].Final || seen[len(seen)-1].Delay != 0 {
				t.Errorf("last attempt %+v: want Final with no delay", seen[len(seen)-1])
			}
			want := tc.wantSleeps
			if len(want) > 0 && want[0] < time.Millisecond {
				for i := range want {
					want[i] *= time.Millisecond
				}
			}
			if len(clock.sleeps) != len(want) {
				t.Fatalf("sleeps %v, want %v", clock.sleeps, want)
			}
			for i := range want {
				if clock.sleeps[i] != want[i] || seen[i].Delay != want[i] {
					t.Errorf("sleep %d = %v (reported %v), want %v", i, clock.sleeps[i], seen[i].Delay, want[i])
				}
			}
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			var ex *retry.ExhaustedError
			if got := errors.As(err, &ex); got != (tc.wantReason != "") {
				t.Fatalf("exhausted = %v (%v), want reason %q", got, err, tc.wantReason)
			}
			if ex != nil && (ex.Reason != tc.wantReason || ex.Attempts != tc.wantCalls) {
				t.Errorf("exhausted %+v, want reason %q after %d attempts", ex, tc.wantReason, tc.wantCalls)
			}
		})
	}
}

func TestDoJitterUsesInjectedRandomness(t *testing.T) {
	t.Parallel()
	clock := &fakeClock{now: time.Unix(0, 0)}
	p := policy()
	p.Jitter = 0.5
	rs := []float64{0, 0.999999, 0.5}
	i := 0
	r := &retry.Retrier{Policy: p, Retryable: retryable, Clock: clock,
		Rand: func() float64 { v := rs[i]; i++; return v }}
	op, _ := failing(clock, 0, errBusy, errBusy, errBusy)
	if err := r.Do(context.Background(), op); err != nil {
		t.Fatal(err)
	}
	want := []time.Duration{50 * time.Millisecond, 300 * time.Millisecond, 400 * time.Millisecond}
	for k := range want {
		if d := clock.sleeps[k] - want[k]; d < -time.Microsecond || d > time.Microsecond {
			t.Errorf("sleep %d = %v, want %v", k, clock.sleeps[k], want[k])
		}
	}
}

func TestDoCanceledWhileWaiting(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	clock := &fakeClock{now: time.Unix(0, 0), cancel: cancel, at: 2}
	r := &retry.Retrier{Policy: policy(), Retryable: retryable, Clock: clock}
	op, calls := failing(clock, 0, errBusy, errBusy, errBusy)
	err := r.Do(ctx, op)
	var ex *retry.ExhaustedError
	if !errors.As(err, &ex) || ex.Reason != retry.ReasonCanceled || !errors.Is(err, errBusy) {
		t.Fatalf("err = %v, want canceled wrapping errBusy", err)
	}
	if *calls != 2 {
		t.Errorf("calls = %d, want 2 (no attempt after cancel)", *calls)
	}
}

func TestNilRetryableFailsClosed(t *testing.T) {
	t.Parallel()
	clock := &fakeClock{}
	r := &retry.Retrier{Policy: policy(), Clock: clock}
	op, calls := failing(clock, 0, errBusy)
	if err := r.Do(context.Background(), op); !errors.Is(err, errBusy) || *calls != 1 {
		t.Fatalf("err=%v calls=%d, want errBusy after 1 call", err, *calls)
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	if err := retry.DefaultPolicy().Validate(); err != nil {
		t.Fatalf("default policy invalid: %v", err)
	}
	bad := []func(*retry.Policy){
		func(p *retry.Policy) { p.Timeout = -1 },
		func(p *retry.Policy) { p.MaxAttempts = -1 },
		func(p *retry.Policy) { p.Timeout, p.MaxAttempts = 0, 0 },
		func(p *retry.Policy) { p.InitialDelay = 0 },
		func(p *retry.Policy) { p.MaxDelay = p.InitialDelay / 2 },
		func(p *retry.Policy) { p.Multiplier = 0.5 },
		func(p *retry.Policy) { p.Jitter = 1.5 },
	}
	for i, f := range bad {
		p := retry.DefaultPolicy()
		f(&p)
		if err := p.Validate(); !errors.Is(err, retry.ErrInvalidPolicy) {
			t.Errorf("case %d: Validate() = %v, want ErrInvalidPolicy", i, err)
		}
	}
}

func TestJitter(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		d    time.Duration
		f, r float64
		want time.Duration
	}{
		{100 * time.Millisecond, 0, 0.7, 100 * time.Millisecond},
		{100 * time.Millisecond, 0.5, 0, 50 * time.Millisecond},
		{100 * time.Millisecond, 0.5, 0.5, 100 * time.Millisecond},
		{100 * time.Millisecond, 1, 0.25, 50 * time.Millisecond},
	} {
		if got := retry.Jitter(tc.d, tc.f, tc.r); got != tc.want {
			t.Errorf("Jitter(%v, %v, %v) = %v, want %v", tc.d, tc.f, tc.r, got, tc.want)
		}
	}
}

func TestResolveIsLazy(t *testing.T) {
	t.Parallel()
	clock := &fakeClock{}
	resolved := 0
	r := &retry.Retrier{Retryable: retryable, Clock: clock,
		Resolve: func() (retry.Policy, error) { resolved++; return policy(), nil }}
	op, _ := failing(clock, 0)
	if err := r.Do(context.Background(), op); err != nil || resolved != 0 {
		t.Fatalf("success: err=%v resolved=%d, want nil and 0", err, resolved)
	}
	op, calls := failing(clock, 0, errBusy, errBusy)
	if err := r.Do(context.Background(), op); err != nil || resolved != 1 || *calls != 3 {
		t.Fatalf("retried: err=%v resolved=%d calls=%d, want nil, 1, 3", err, resolved, *calls)
	}
	r.Resolve = func() (retry.Policy, error) { return retry.Policy{}, nil }
	op, calls = failing(clock, 0, errBusy)
	err := r.Do(context.Background(), op)
	var re *retry.ResolveError
	if !errors.As(err, &re) || !errors.Is(err, retry.ErrInvalidPolicy) || !errors.Is(err, errBusy) || *calls != 1 {
		t.Fatalf("bad resolved policy: err=%v calls=%d, want a ResolveError wrapping ErrInvalidPolicy and errBusy after 1 call", err, *calls)
	}
}

// TestMaxDelayCapsJitter: jitter never takes a delay past MaxDelay.
func TestMaxDelayCapsJitter(t *testing.T) {
	t.Parallel()
	clock := &fakeClock{now: time.Unix(1000, 0)}
	p := policy()
	p.Jitter = 0.5
	r := &retry.Retrier{Policy: p, Retryable: retryable, Clock: clock,
		Rand: func() float64 { return 0.999 }} // the largest jitter there is
	op, _ := failing(clock, 0, errBusy, errBusy, errBusy, errBusy, errBusy)
	if err := r.Do(context.Background(), op); err != nil {
		t.Fatal(err)
	}
	capped := 0
	for _, d := range clock.sleeps {
		if d > p.MaxDelay {
			t.Errorf("slept %v, above MaxDelay %v", d, p.MaxDelay)
		}
		if d == p.MaxDelay {
			capped++
		}
	}
	if capped == 0 {
		t.Errorf("sleeps %v: the schedule never reached MaxDelay, so the cap went untested", clock.sleeps)
	}
}

// waitErr is a transient failure whose server asked to wait.
type waitErr struct{ wait time.Duration }

func (e waitErr) Error() string             { return "rate limited" }
func (e waitErr) Unwrap() error             { return errBusy }
func (e waitErr) RetryAfter() time.Duration { return e.wait }

// TestDoWaitsAsAsked: an error with RetryAfter makes the next attempt wait at least that
// long, past MaxDelay; a wait the budget cannot afford ends the loop at once, without
// sleeping.
func TestDoWaitsAsAsked(t *testing.T) {
	t.Parallel()
	clock := &fakeClock{now: time.Unix(0, 0)}
	r := &retry.Retrier{Policy: policy(), Retryable: retryable, Clock: clock}
	op, _ := failing(clock, 0, waitErr{2 * time.Second}, waitErr{time.Millisecond})
	if err := r.Do(context.Background(), op); err != nil {
		t.Fatal(err)
	}
	if len(clock.sleeps) != 2 || clock.sleeps[0] != 2*time.Second || clock.sleeps[1] != 200*time.Millisecond {
		t.Errorf("sleeps %v, want [2s 200ms]", clock.sleeps)
	}

	clock = &fakeClock{now: time.Unix(0, 0)}
	r = &retry.Retrier{Policy: policy(), Retryable: retryable, Clock: clock}
	op, calls := failing(clock, 0, waitErr{time.Minute})
	err := r.Do(context.Background(), op)
	var ex *retry.ExhaustedError
	if !errors.As(err, &ex) || ex.Reason != retry.ReasonDeadline || *calls != 1 || len(clock.sleeps) != 0 {
		t.Errorf("err %v, %d calls, sleeps %v: want deadline after one attempt, no sleep", err, *calls, clock.sleeps)
	}
}

// pacedErr is a transient failure that sets its own pause.
type pacedErr struct{ pause time.Duration }

func (e pacedErr) Error() string        { return "lost a race, put right" }
func (e pacedErr) Unwrap() error        { return errBusy }
func (e pacedErr) Pause() time.Duration { return e.pause }

// TestDoPaced: an error with Pause sets the delay itself, in place of the schedule's,
// past MaxDelay and down to zero; an ordinary failure after it gets the schedule's.
func TestDoPaced(t *testing.T) {
	t.Parallel()
	clock := &fakeClock{now: time.Unix(0, 0)}
	r := &retry.Retrier{Policy: policy(), Retryable: retryable, Clock: clock}
	op, _ := failing(clock, 0, pacedErr{3 * time.Second}, pacedErr{0}, errBusy)
	if err := r.Do(context.Background(), op); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(clock.sleeps) != "[3s 0s 400ms]" {
		t.Errorf("sleeps %v, want [3s 0s 400ms]", clock.sleeps)
	}
}
