package retry

import (
	"context"
	"fmt"
	"time"

	"github.com/cenkalti/backoff/v4"
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
//
// The loop is backoff's (backoff.RetryNotifyWithTimer), on the Retrier's clock; the
// schedule is the policy's as a backoff.BackOff (schedule.go).
func (r *Retrier) Do(ctx context.Context, op func(ctx context.Context, attempt int) error) error {
	s, err := r.newSchedule(ctx)
	if err != nil {
		return err
	}
	operation := func() error {
		s.n++
		begin := s.clock.Now()
		err := op(ctx, s.n)
		end := s.clock.Now()
		s.last, s.end = Attempt{Number: s.n, Start: begin, Duration: end.Sub(begin), Err: err}, end
		switch {
		case err == nil:
			return nil
		case r.Retryable == nil || !r.Retryable(err):
			s.permanent = true
			return backoff.Permanent(err)
		}
		if err := s.resolve(); err != nil {
			s.permanent = true
			return backoff.Permanent(&ResolveError{Err: err, After: s.last.Err})
		}
		return err
	}
	notify := func(_ error, d time.Duration) {
		s.last.Delay = d
		r.report(s.last)
	}
	err = backoff.RetryNotifyWithTimer(operation, backoff.WithContext(s, ctx), notify, s.timer(ctx))
	s.last.Final = true
	r.report(s.last)
	switch {
	case err == nil || s.permanent:
		return err // a success, or a permanent failure, as op or resolve gave it
	case ctx.Err() != nil:
		s.reason = ReasonCanceled
	}
	return &ExhaustedError{Reason: s.reason, Attempts: s.n, Elapsed: s.end.Sub(s.start), Err: s.last.Err}
}

func (r *Retrier) report(a Attempt) {
	if r.OnAttempt != nil {
		r.OnAttempt(a)
	}
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
