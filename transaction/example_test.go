package transaction_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/refretry/refretry/failure"
	"io"
	"os"
	"os/exec"
	"strings"

	"github.com/refretry/refretry/retry"
	"github.com/refretry/refretry/settings"
	"github.com/refretry/refretry/transaction"
)

func ExampleClassify() {
	stderr := []byte("fatal: update_ref failed for ref 'refs/heads/main': cannot lock ref 'refs/heads/main': " +
		"is at 1111111111111111111111111111111111111111 but expected 2222222222222222222222222222222222222222\n")
	err := transaction.Classify(128, stderr)
	fmt.Println(err.Class, err.Moved.Ref, err.Moved.Actual[:7])

	err = transaction.Classify(128, []byte("fatal: update_ref failed for ref 'refs/heads/ci/1': cannot lock references\n"))
	fmt.Println(err.Class)
	// Output:
	// conflict refs/heads/main 1111111
	// lock-contention
}

func ExampleParseArgs() {
	a := transaction.ParseArgs([]string{"-m", "ci", "--std", "-z"})
	fmt.Println(a.Understood, a.Stdin, a.NUL)
	// Output: true true true
}

// A Runner is configured once and run for each update: here one ref, then a --stdin
// batch that fails at once on a ref that exists (a conflict, never retried) and so
// applies nothing.
func ExampleRunner() {
	dir, err := os.MkdirTemp("", "refretry-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	if err := exec.Command("git", "init", "-q", dir).Run(); err != nil {
		panic(err)
	}
	// Refs may point at any object; a blob is the quickest to make.
	hash := exec.Command("git", "-C", dir, "hash-object", "-w", "--stdin")
	hash.Stdin = strings.NewReader("result of job 1\n")
	out, err := hash.Output()
	if err != nil {
		panic(err)
	}
	oid := strings.TrimSpace(string(out))

	r := &transaction.Runner{
		Config: settings.Config{
			Git:  "git",
			Dirs: []string{dir},
			Env:  os.Environ(),
			OnAttempt: func(a retry.Attempt) {
				if !a.Final {
					fmt.Println("retrying after", a.Err)
				}
			},
		},
	}
	ctx := context.Background()
	// git's own output, from the final attempt, goes to the writers given.
	res, err := r.Run(ctx, []string{"refs/ci/job-1", oid}, nil, os.Stdout, io.Discard)
	fmt.Println(res.ExitCode, err)

	batch := strings.NewReader("create refs/ci/job-2 " + oid + "\ncreate refs/ci/job-1 " + oid + "\n")
	res, err = r.Run(ctx, []string{"--stdin"}, batch, os.Stdout, io.Discard)
	var te *failure.Error
	fmt.Println(res.ExitCode, errors.As(err, &te) && te.Class == failure.Conflict)

	show := exec.Command("git", "-C", dir, "for-each-ref", "--format=%(refname)", "refs/ci/")
	refs, _ := show.Output()
	fmt.Print(string(refs))
	// Output:
	// 0 <nil>
	// 128 true
	// refs/ci/job-1
}
