package retry

import (
	"errors"
	"fmt"
	"time"
)

// Policy is the retry schedule and budget.
type Policy struct {
	// Timeout is the total budget, measured from the start of the first attempt. No
	// attempt starts after it. Zero means no deadline (MaxAttempts must then be set).
	Timeout time.Duration
	// MaxAttempts caps the number of attempts, the first included. Zero means no cap
	// (Timeout must then be set).
	MaxAttempts int
	// InitialDelay is the nominal delay before the second attempt.
	InitialDelay time.Duration
	// MaxDelay caps every delay, jitter included.
	MaxDelay time.Duration
	// Multiplier grows the nominal delay after each attempt.
	Multiplier float64
	// Jitter is the randomisation factor in [0, 1]: the actual delay is drawn uniformly
	// from [d×(1-Jitter), d×(1+Jitter)].
	Jitter float64
}

// DefaultPolicy returns the defaults refretry ships with. docs/defaults.md records the
// measurements behind them.
func DefaultPolicy() Policy {
	return Policy{
		Timeout:      60 * time.Second,
		MaxAttempts:  50,
		InitialDelay: 10 * time.Millisecond,
		MaxDelay:     2 * time.Second,
		Multiplier:   2,
		Jitter:       0.5,
	}
}

// ErrInvalidPolicy is wrapped by the error [Policy.Validate] returns.
var ErrInvalidPolicy = errors.New("invalid retry policy")

// Validate reports the first setting that cannot work.
func (p Policy) Validate() error {
	switch {
	case p.Timeout < 0:
		return fmt.Errorf("%w: timeout %v is negative", ErrInvalidPolicy, p.Timeout)
	case p.MaxAttempts < 0:
		return fmt.Errorf("%w: max attempts %d is negative", ErrInvalidPolicy, p.MaxAttempts)
	case p.Timeout == 0 && p.MaxAttempts == 0:
		return fmt.Errorf("%w: neither a timeout nor an attempt cap is set", ErrInvalidPolicy)
	case p.InitialDelay <= 0:
		return fmt.Errorf("%w: initial delay %v must be positive", ErrInvalidPolicy, p.InitialDelay)
	case p.MaxDelay < p.InitialDelay:
		return fmt.Errorf("%w: max delay %v is below the initial delay %v", ErrInvalidPolicy, p.MaxDelay, p.InitialDelay)
	case p.Multiplier < 1:
		return fmt.Errorf("%w: multiplier %v is below 1", ErrInvalidPolicy, p.Multiplier)
	case p.Jitter < 0 || p.Jitter > 1:
		return fmt.Errorf("%w: jitter %v is outside [0, 1]", ErrInvalidPolicy, p.Jitter)
	}
	return nil
}
