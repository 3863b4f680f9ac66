package failure_test

import (
	"errors"
	"fmt"

	"github.com/refretry/refretry/failure"
	"github.com/refretry/refretry/transaction"
)

// publish stands for the caller's own code: it wraps the failure refretry returned,
// as any layer between git and the caller may.
func publish(stderr string) error {
	if f := transaction.Classify(128, []byte(stderr)); f != nil {
		return fmt.Errorf("publishing the result: %w", f)
	}
	return nil
}

// A caller reads what git said from the failure's fields, found with errors.As
// through every wrapping: a ref another writer moved first, a lock another process
// held, and an update that can never succeed.
func ExampleError() {
	for _, stderr := range []string{
		"fatal: update_ref failed for ref 'refs/heads/main': cannot lock ref 'refs/heads/main': " +
			"is at 1111111111111111111111111111111111111111 but expected 2222222222222222222222222222222222222222\n",
		"fatal: update_ref failed for ref 'refs/heads/main': cannot lock ref 'refs/heads/main': " +
			"Unable to create '/srv/repo/.git/refs/heads/main.lock': File exists.\n\n" +
			"Another git process seems to be running in this repository, e.g.\n" +
			"an editor opened by 'git commit'. Please make sure all processes\n" +
			"are terminated then try again. If it still fails, a git process\n" +
			"may have crashed in this repository earlier:\n" +
			"remove the file manually to continue.\n",
		"fatal: update_ref failed for ref 'refs/heads/ci 1': refusing to update ref with bad name 'refs/heads/ci 1'\n",
	} {
		err := publish(stderr)
		var f *failure.Error
		if !errors.As(err, &f) {
			continue
		}
		switch {
		case f.Moved != nil:
			fmt.Printf("%s: %s is at %.7s, not %.7s\n", f.Class, f.Moved.Ref, f.Moved.Actual, f.Moved.Expected)
		case f.Lock != nil:
			fmt.Printf("%s: %s (retryable: %t)\n", f.Class, f.Lock.Path, f.Class.Retryable())
		default:
			fmt.Printf("%s: exit %d, %s\n", f.Class, f.ExitCode, f.Line())
		}
	}
	// Output:
	// conflict: refs/heads/main is at 1111111, not 2222222
	// lock-contention: /srv/repo/.git/refs/heads/main.lock (retryable: true)
	// invalid-input: exit 128, refusing to update ref with bad name 'refs/heads/ci 1'
}
