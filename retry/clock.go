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
