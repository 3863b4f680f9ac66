package retry

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/refretry/refretry/internal/realtime"
)

// Attempt describes one finished attempt, as passed to [Retrier].OnAttempt.
type Attempt struct {
	Number   int           // 1 for the first attempt
	Start    time.Time     // when it started
	Duration time.Duration // how long it ran
	Err      error         // nil on success
	// Delay is the pause before the next attempt; zero when there is none.
	Delay time.Duration
	// Final is true when no further attempt follows.
	Final bool
}

// Reason says why the loop gave up on a transient failure.
type Reason string

const (
	ReasonDeadline Reason = "deadline"     // the next attempt would start past the timeout
	ReasonAttempts Reason = "max-attempts" // the attempt cap was reached
	ReasonCanceled Reason = "canceled"     // the context was done
	// For a budget that starts over while the run makes progress (a push waiting on
	// other jobs; refretry's settings.Ceiling), what ended it instead of the deadline:
	ReasonStalled Reason = "no-progress" // nothing moved for a whole budget
	ReasonCeiling Reason = "ceiling"     // the hard limit on the budget's new starts
)

// Waiter is implemented by an error that says how long to wait before trying again
// (an HTTP server's Retry-After): the next attempt starts no sooner, even past
// Policy.MaxDelay; when the budget does not allow that wait, the loop gives up at once
// (ReasonDeadline) instead of trying early. [Retrier.Do] finds it with errors.As.
type Waiter interface {
	RetryAfter() time.Duration
}

// Paced is implemented by an error that sets the pause before the next attempt
// itself, in place of the schedule's: what failed was put right before the loop
// resumes (a branch rebased onto the remote's new tip), and the pause only spreads out
// those racing for the same thing (zero: none). Policy.MaxDelay does not cap it; a
// Waiter's longer wait comes first; the attempt cap and the deadline still apply.
type Paced interface {
	Pause() time.Duration
}

// ExhaustedError is returned when the last failure was transient but no further attempt
// was allowed. It wraps the last failure.
type ExhaustedError struct {
	Reason   Reason
	Attempts int
	Elapsed  time.Duration
	Err      error
}

func (e *ExhaustedError) Error() string {
	return fmt.Sprintf("gave up after %d attempts in %v (%s): %v", e.Attempts, e.Elapsed.Round(time.Millisecond), e.Reason, e.Err)
}

func (e *ExhaustedError) Unwrap() error { return e.Err }

// Retrier runs operations under a policy. The zero values of Clock and Rand mean the
// system clock and a process-wide random source.
type Retrier struct {
	Policy Policy
	// Retryable reports whether a failure may succeed on another attempt. It must
	// answer false for anything it does not recognise, and a nil Retryable answers
	// false for everything: the loop fails closed.
	Retryable func(err error) bool
	Clock     Clock
	Rand      func() float64 // uniform in [0, 1)
	// OnAttempt, if set, is called after every attempt, before any delay.
	OnAttempt func(Attempt)
	// Resolve, if set, supplies the policy when it is first needed: after the first
	// transient failure. It keeps costly lookups (configuration read from another
	// process, say) off the path where the first attempt succeeds. Policy is then unused.
	Resolve func() (Policy, error)
}

// Do calls op until it succeeds, fails permanently, or the policy allows no further
// attempt. It returns nil, op's permanent error unchanged, an *ExhaustedError wrapping
// the last transient error, or (when ctx is done between attempts) an *ExhaustedError
// with ReasonCanceled. op receives the attempt number, starting at 1. [Retrier.OnAttempt]
// sees every attempt, the successful one included.
func (r *Retrier) Do(ctx context.Context, op func(ctx context.Context, attempt int) error) error {
	l, err := r.newLoop()
	if err != nil {
		return err
	}
	for n := 1; ; n++ {
		begin := l.clock.Now()
		err := op(ctx, n)
		end := l.clock.Now()
		a := Attempt{Number: n, Start: begin, Duration: end.Sub(begin), Err: err}
		ferr := l.decide(ctx, &a, end)
		r.report(a)
		if a.Final {
			return ferr
		}
		if cerr := l.clock.Sleep(ctx, a.Delay); cerr != nil {
			return &ExhaustedError{Reason: ReasonCanceled, Attempts: n, Elapsed: l.clock.Now().Sub(l.start), Err: err}
		}
	}
}

// loop is one run of [Retrier.Do].
type loop struct {
	*Retrier
	policy   Policy
	resolved bool // policy is known and valid
	clock    Clock
	random   func() float64
	sched    *backoff.ExponentialBackOff // built after the first transient failure
	start    time.Time
}

// newLoop starts a run: the policy checked unless it is resolved later, the clock and
// the random source chosen.
func (r *Retrier) newLoop() (*loop, error) {
	l := &loop{Retrier: r, policy: r.Policy, resolved: r.Resolve == nil, clock: r.Clock, random: r.Rand}
	if l.resolved {
		if err := l.policy.Validate(); err != nil {
			return nil, err
		}
	}
	if l.clock == nil {
		l.clock = realtime.Clock{}
	}
	if l.random == nil {
		l.random = realtime.Float64
	}
	l.start = l.clock.Now()
	return l, nil
}

// decide settles what follows attempt a, which ended at end: it sets either a.Final,
// returning the error Do ends with, or a.Delay, the pause before the next attempt.
func (l *loop) decide(ctx context.Context, a *Attempt, end time.Time) error {
	if a.Err == nil || l.Retryable == nil || !l.Retryable(a.Err) {
		a.Final = true
		return a.Err
	}
	if err := l.resolve(); err != nil {
		a.Final = true
		return &ResolveError{Err: err, After: a.Err}
	}
	delay := l.delay(a.Err)
	if reason := stop(ctx, l.policy, a.Number, end, l.start, delay); reason != "" {
		a.Final = true
		return &ExhaustedError{Reason: reason, Attempts: a.Number, Elapsed: end.Sub(l.start), Err: a.Err}
	}
	a.Delay = delay
	return nil
}

// resolve asks Resolve for the policy, the first time it is needed.
func (l *loop) resolve() error {
	if l.resolved {
		return nil
	}
	p, err := l.Resolve()
	if err == nil {
		err = p.Validate()
	}
	if err != nil {
		return err
	}
	l.policy, l.resolved = p, true
	return nil
}

// delay is the pause after the transient failure err: the schedule's next delay,
// jittered and capped, unless err sets its own pause or asks for a longer wait.
func (l *loop) delay(err error) time.Duration {
	if l.sched == nil {
		l.sched = schedule(l.policy, l.clock)
	}
	d := min(Jitter(l.sched.NextBackOff(), l.policy.Jitter, l.random()), l.policy.MaxDelay)
	var p Paced
	if errors.As(err, &p) {
		d = p.Pause()
	}
	var w Waiter
	if errors.As(err, &w) && w.RetryAfter() > d {
		return w.RetryAfter() // what the server asked for, past MaxDelay if need be
	}
	return d
}

// stop returns why no attempt may follow attempt n, or "" when one may.
func stop(ctx context.Context, p Policy, n int, now, start time.Time, delay time.Duration) Reason {
	switch {
	case ctx.Err() != nil:
		return ReasonCanceled
	case p.MaxAttempts > 0 && n >= p.MaxAttempts:
		return ReasonAttempts
	case p.Timeout > 0 && now.Add(delay).Sub(start) > p.Timeout:
		return ReasonDeadline
	}
	return ""
}

func (r *Retrier) report(a Attempt) {
	if r.OnAttempt != nil {
		r.OnAttempt(a)
	}
}

// schedule builds the un-randomised exponential schedule; jitter is applied separately
// so that it can use the injected random source.
func schedule(p Policy, clock Clock) *backoff.ExponentialBackOff {
	b := &backoff.ExponentialBackOff{
		InitialInterval:     p.InitialDelay,
		RandomizationFactor: 0,
		Multiplier:          p.Multiplier,
		MaxInterval:         p.MaxDelay,
		MaxElapsedTime:      0, // the deadline is ours to enforce
		Stop:                backoff.Stop,
		Clock:               clock,
	}
	b.Reset()
	return b
}

// ResolveError is returned by [Retrier.Do] when Resolve failed, or gave an invalid
// policy, after a transient failure: no retry was possible. After is that failure.
type ResolveError struct {
	Err   error
	After error
}

func (e *ResolveError) Error() string { return fmt.Sprintf("%v (after: %v)", e.Err, e.After) }

// Unwrap returns both errors, so that errors.Is and errors.As find either.
func (e *ResolveError) Unwrap() []error { return []error{e.Err, e.After} }
