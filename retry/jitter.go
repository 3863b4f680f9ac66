package retry

import "time"

// Jitter spreads the nominal delay d over [d×(1-factor), d×(1+factor)], picking the point
// given by r in [0, 1). It is a pure function so schedules can be checked exactly.
func Jitter(d time.Duration, factor, r float64) time.Duration {
	if factor <= 0 || d <= 0 {
		return d
	}
	lo := float64(d) * (1 - factor)
	hi := float64(d) * (1 + factor)
	return time.Duration(lo + r*(hi-lo))
}
