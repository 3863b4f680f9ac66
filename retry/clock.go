package retry

import (
	"context"
	"time"
)

// Clock is the source of time for the loop; nil in a [Retrier] means the real clock.
// Tests supply a fake that advances on Sleep, so that they never sleep.
type Clock interface {
	Now() time.Time
	// Sleep waits for d or until ctx is done, whichever comes first, and returns
	// ctx.Err() in the second case.
	Sleep(ctx context.Context, d time.Duration) error
}

// systemClock is the real clock, used when [Retrier].Clock is nil.
type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

func (systemClock) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
