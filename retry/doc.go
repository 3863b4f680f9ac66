// Package retry runs an operation again while its failures are transient, with jittered
// exponential backoff under a total deadline and an attempt cap.
//
// A [Policy] (start from [DefaultPolicy]) is the schedule and the budget; [Retrier.Do]
// is the loop that follows it; [Jitter] is the randomisation, as a pure function. The
// loop reports each attempt as an [Attempt] and ends with nil, the operation's final
// error, an [*ExhaustedError] or a [*ResolveError] (or, for a policy that cannot work,
// an error wrapping [ErrInvalidPolicy]). The runners of packages transaction, push and
// fetch run in this loop and take and return the same values.
//
// The contract:
//
//   - [Retrier].Retryable decides, for each failure, whether another attempt may help.
//     Anything it does not recognise must be final, and a nil Retryable retries
//     nothing: the loop fails closed.
//   - The delay before attempt n+1 follows the exponential schedule of
//     github.com/cenkalti/backoff/v4 (InitialDelay × Multiplier^(n-1), capped at
//     MaxDelay), randomised by [Jitter] with the policy's factor, and capped at MaxDelay
//     again. A failure that implements [Paced] sets the delay itself; one that
//     implements [Waiter] makes it at least the wait it asks for.
//   - The deadline ([Policy].Timeout, measured from the start of the first attempt)
//     decides only whether a new attempt may start: when the next delay would end past
//     it, the loop gives up without sleeping. A running attempt is never interrupted by
//     the deadline; only the caller's context does that.
//   - The loop never sleeps after the last attempt.
//   - Time and randomness are injectable ([Clock], [Retrier].Rand) so that tests of code
//     built on this package never sleep.
//
// What backoff/v4 does and what this package adds: the loop is backoff's
// (RetryNotifyWithTimer, with backoff.Permanent for a final failure and its timer on
// the injected [Clock]), and the nominal delays are its ExponentialBackOff's. Its own
// jitter draws from math/rand's global source, which tests cannot replace, and its
// MaxElapsedTime stops the schedule without saying why, nor whether the next delay
// would end past the deadline (the loop must not sleep for nothing); so the BackOff
// the loop runs on (schedule.go) wraps the ExponentialBackOff (RandomizationFactor 0,
// no MaxElapsedTime) and adds [Jitter] with the injected randomness, [Paced] and
// [Waiter], the attempt cap and the deadline, and says which ended the run.
//
// The package knows nothing about git.
package retry
