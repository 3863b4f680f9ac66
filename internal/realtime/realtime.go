// Package realtime is the real clock and the process-wide random source: what a nil
// retry.Clock and a nil Rand mean, in the retry loop and in every Runner that waits
// outside it (gather's looks at the remote).
package realtime

import (
	"context"
	"math/rand/v2"
	"time"
)

// Clock is the real clock; it has retry.Clock's methods.
type Clock struct{}

// Now is the time now.
func (Clock) Now() time.Time { return time.Now() }

// Sleep waits for d or until ctx is done, whichever comes first, and returns
// ctx.Err() in the second case.
func (Clock) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Float64 is uniform in [0, 1), from math/rand's process-wide source.
func Float64() float64 { return rand.Float64() }
