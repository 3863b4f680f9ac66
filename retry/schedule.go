package retry

import (
	"context"
	"errors"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/refretry/refretry/internal/realtime"
)

// schedule is one run of [Retrier.Do] as a backoff.BackOff: backoff's
// ExponentialBackOff gives the nominal delays (InitialDelay, times Multiplier, up to
// MaxDelay), and this adds what backoff cannot know: jitter from the Retrier's own
// random source (so that tests can fix it), the attempt cap, the pause or wait the
// last failure asked for (Paced, Waiter), and the deadline, judged with the delay
// that would follow and the time the attempts took. Stop says why in reason.
type schedule struct {
	*Retrier
	policy    Policy
	resolved  bool // policy is known and valid
	clock     Clock
	random    func() float64
	exp       *backoff.ExponentialBackOff // built once the policy is known
	start     time.Time
	n         int       // attempts so far
	last      Attempt   // the last attempt
	end       time.Time // when it ended
	reason    Reason    // why NextBackOff stopped the loop
	permanent bool      // the loop ended on a failure no attempt may follow
}

// newSchedule starts a run: the policy checked unless it is resolved later, the clock
// and the random source chosen.
func (r *Retrier) newSchedule(ctx context.Context) (*schedule, error) {
	s := &schedule{Retrier: r, policy: r.Policy, resolved: r.Resolve == nil, clock: r.Clock, random: r.Rand}
	if s.resolved {
		if err := s.policy.Validate(); err != nil {
			return nil, err
		}
	}
	if s.clock == nil {
		s.clock = realtime.Clock{}
	}
	if s.random == nil {
		s.random = realtime.Float64
	}
	s.start = s.clock.Now()
	return s, nil
}

// resolve asks Resolve for the policy, the first time it is needed.
func (s *schedule) resolve() error {
	if s.resolved {
		return nil
	}
	p, err := s.Resolve()
	if err == nil {
		err = p.Validate()
	}
	if err != nil {
		return err
	}
	s.policy, s.resolved = p, true
	return nil
}

// Reset is backoff's start of a loop; the schedule starts with its run.
func (s *schedule) Reset() {}

// NextBackOff is the pause after the last attempt's transient failure, or backoff.Stop
// when no attempt may follow (reason says why).
func (s *schedule) NextBackOff() time.Duration {
	if s.exp == nil {
		s.exp = &backoff.ExponentialBackOff{
			InitialInterval: s.policy.InitialDelay, Multiplier: s.policy.Multiplier, MaxInterval: s.policy.MaxDelay,
			MaxElapsedTime: 0, // the deadline counts the jittered pause: judged below
			Stop:           backoff.Stop, Clock: s.clock,
		}
		s.exp.Reset()
	}
	d := min(Jitter(s.exp.NextBackOff(), s.policy.Jitter, s.random()), s.policy.MaxDelay)
	var p Paced
	if errors.As(s.last.Err, &p) {
		d = p.Pause()
	}
	var w Waiter
	if errors.As(s.last.Err, &w) && w.RetryAfter() > d {
		d = w.RetryAfter() // what the server asked for, past MaxDelay if need be
	}
	switch {
	case s.policy.MaxAttempts > 0 && s.n >= s.policy.MaxAttempts:
		s.reason = ReasonAttempts
	case s.policy.Timeout > 0 && s.end.Add(d).Sub(s.start) > s.policy.Timeout:
		s.reason = ReasonDeadline
	default:
		return d
	}
	return backoff.Stop
}

// timer is backoff's timer on the run's clock: a pause is the clock's Sleep, which a
// fake clock passes at once.
func (s *schedule) timer(ctx context.Context) backoff.Timer {
	return &clockTimer{clock: s.clock, ctx: ctx}
}

// clockTimer is a backoff.Timer whose waits are a Clock's Sleep.
type clockTimer struct {
	clock Clock
	ctx   context.Context
	c     chan time.Time
}

func (t *clockTimer) Start(d time.Duration) {
	t.c = make(chan time.Time, 1)
	go func(c chan time.Time) {
		if t.clock.Sleep(t.ctx, d) == nil {
			c <- t.clock.Now()
		}
	}(t.c)
}

func (t *clockTimer) Stop() {}

func (t *clockTimer) C() <-chan time.Time { return t.c }
