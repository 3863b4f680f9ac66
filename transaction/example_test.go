package transaction_test

import (
	"errors"
	"fmt"

	"github.com/refretry/refretry/transaction"
)

func ExampleClassify() {
	stderr := []byte("fatal: update_ref failed for ref 'refs/heads/main': cannot lock ref 'refs/heads/main': " +
		"is at 1111111111111111111111111111111111111111 but expected 2222222222222222222222222222222222222222\n")
	err := transaction.Classify(128, stderr)
	var stale *transaction.StaleValueError
	fmt.Println(err.Class, errors.As(err, &stale), stale.Ref)

	err = transaction.Classify(128, []byte("fatal: update_ref failed for ref 'refs/heads/ci/1': cannot lock references\n"))
	fmt.Println(err.Class)
	// Output:
	// conflict true refs/heads/main
	// lock-contention
}

func ExampleParseArgs() {
	a := transaction.ParseArgs([]string{"-m", "ci", "--std", "-z"})
	fmt.Println(a.Understood, a.Stdin, a.NUL)
	// Output: true true true
}
