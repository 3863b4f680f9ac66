package retry_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/refretry/refretry/retry"
)

func ExampleRetrier_Do() {
	errLocked := errors.New("locked")
	r := &retry.Retrier{
		Policy: retry.Policy{
			Timeout: 5 * time.Second, MaxAttempts: 5,
			InitialDelay: time.Millisecond, MaxDelay: 10 * time.Millisecond,
			Multiplier: 2, Jitter: 0.5,
		},
		// Only a busy lock is worth another attempt; anything else is final.
		Retryable: func(err error) bool { return errors.Is(err, errLocked) },
		OnAttempt: func(a retry.Attempt) {
			if !a.Final {
				fmt.Printf("attempt %d: %v; retrying\n", a.Number, a.Err)
			}
		},
	}
	err := r.Do(context.Background(), func(_ context.Context, attempt int) error {
		if attempt < 3 {
			return errLocked
		}
		return nil
	})
	fmt.Println("done:", err)
	// Output:
	// attempt 1: locked; retrying
	// attempt 2: locked; retrying
	// done: <nil>
}
