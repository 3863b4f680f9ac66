package retry

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/cenkalti/backoff/v4"
)

// Attempt describes one finished attempt, as passed to [Retrier].OnAttempt.
type Attempt struct {
	Number   int           // 1 for the first attempt
	Start    time.Time     // when it started
	Duration time.Duration // how long it ran
	Err      error         // nil on success
	Class    Class         // the classifier's verdict on Err (Permanent when Err is nil)
	// Delay is the pause before the next attempt; zero when there is none.
	Delay time.Duration
	// Final is true when no further attempt follows.
	Final bool
}

// Result summarises a run of the loop.
type Result struct {
	Attempts int
	Elapsed  time.Duration
}

// Reason says why the loop gave up on a transient failure.
type Reason string

const (
	ReasonDeadline Reason = "deadline"     // the next attempt would start past the timeout
	ReasonAttempts Reason = "max-attempts" // the attempt cap was reached
	ReasonCanceled Reason = "canceled"     // the context was done
)

// Waiter is implemented by an error that says how long to wait before trying again
// (an HTTP server's Retry-After): the next attempt starts no sooner, even past
// Policy.MaxDelay; when the budget does not allow that wait, the loop gives up at once
// (ReasonDeadline) instead of trying early. [Retrier.Do] finds it with errors.As.
type Waiter interface {
	RetryAfter() time.Duration
}

// Immediate is implemented by an error after which the next attempt needs no pause:
// what failed was put right before the loop resumes (a branch rebased onto the
// remote's new tip), so a pause would only add time. The attempt cap and the deadline
// still apply. A Waiter's wait comes first.
type Immediate interface {
	RetryNow() bool
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
	Policy     Policy
	Classifier Classifier
	Clock      Clock
	Rand       func() float64 // uniform in [0, 1)
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
// with ReasonCanceled. op receives the attempt number, starting at 1.
func (r *Retrier) Do(ctx context.Context, op func(ctx context.Context, attempt int) error) (Result, error) {
	policy := r.Policy
	resolved := r.Resolve == nil
	if resolved {
		if err := policy.Validate(); err != nil {
			return Result{}, err
		}
	}
	clock := r.Clock
	if clock == nil {
		clock = SystemClock{}
	}
	random := r.Rand
	if random == nil {
		random = rand.Float64
	}
	var sched *backoff.ExponentialBackOff

	start := clock.Now()
	for n := 1; ; n++ {
		begin := clock.Now()
		err := op(ctx, n)
		end := clock.Now()
		a := Attempt{Number: n, Start: begin, Duration: end.Sub(begin), Err: err}
		res := Result{Attempts: n, Elapsed: end.Sub(start)}
		if err == nil {
			a.Final = true
			r.report(a)
			return res, nil
		}
		if r.Classifier != nil {
			a.Class = r.Classifier.Classify(err)
		}
		if a.Class != Transient {
			a.Final = true
			r.report(a)
			return res, err
		}

		if !resolved {
			p, perr := r.Resolve()
			if perr == nil {
				perr = p.Validate()
			}
			if perr != nil {
				a.Final = true
				r.report(a)
				return res, &ResolveError{Err: perr, After: err}
			}
			policy, resolved = p, true
		}
		if sched == nil {
			sched = schedule(policy, clock)
		}
		delay := min(Jitter(sched.NextBackOff(), policy.Jitter, random()), policy.MaxDelay)
		var w Waiter
		var im Immediate
		switch {
		case errors.As(err, &w) && w.RetryAfter() > delay:
			delay = w.RetryAfter() // what the server asked for, past MaxDelay if need be
		case errors.As(err, &im) && im.RetryNow():
			delay = 0
		}
		reason := stop(ctx, policy, n, end, start, delay)
		if reason != "" {
			a.Final = true
			r.report(a)
			return res, &ExhaustedError{Reason: reason, Attempts: n, Elapsed: res.Elapsed, Err: err}
		}
		a.Delay = delay
		r.report(a)
		if cerr := clock.Sleep(ctx, delay); cerr != nil {
			res.Elapsed = clock.Now().Sub(start)
			return res, &ExhaustedError{Reason: ReasonCanceled, Attempts: n, Elapsed: res.Elapsed, Err: err}
		}
	}
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
