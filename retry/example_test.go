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
		Classifier: retry.ClassifierFunc(func(err error) retry.Class {
			if errors.Is(err, errLocked) {
				return retry.Transient
			}
			return retry.Permanent
		}),
	}
	res, err := r.Do(context.Background(), func(_ context.Context, attempt int) error {
		if attempt < 3 {
			return errLocked
		}
		return nil
	})
	fmt.Println(res.Attempts, err)
	// Output: 3 <nil>
}
