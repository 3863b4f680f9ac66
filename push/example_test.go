package push_test

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/refretry/refretry/push"
	"github.com/refretry/refretry/retry"
)

func ExampleClassify() {
	stdout := []byte("To file:///srv/results.git\n" +
		"!\trefs/heads/main:refs/ci/42/lint\t[remote rejected] (atomic transaction failed)\n" +
		"Done\n")
	stderr := []byte("remote: error: cannot lock references        \n" +
		"error: failed to push some refs to 'file:///srv/results.git'\n")
	e := push.Classify(1, stdout, stderr)
	fmt.Println(e.Class, e.Class.Retryable(), e.Lock != nil && e.Lock.Remote)

	// The same rejection without the server's lock message is not retried.
	e = push.Classify(1, stdout, []byte("error: failed to push some refs to 'file:///srv/results.git'\n"))
	fmt.Println(e.Class, e.Class.Retryable())

	stdout = []byte("To file:///srv/results.git\n!\trefs/heads/main:refs/heads/main\t[rejected] (fetch first)\nDone\n")
	e = push.Classify(1, stdout, nil)
	var r *push.RejectedError
	fmt.Println(e.Class, errors.As(e, &r), r.Ref, r.Reason)
	// Output:
	// lock-contention true true
	// other false
	// behind true refs/heads/main fetch first
}

func ExampleParsePorcelain() {
	rep := push.ParsePorcelain([]byte("To https://git.example.com/r.git\n" +
		"*\tHEAD:refs/ci/7/test\t[new reference]\n" +
		"=\trefs/heads/main:refs/heads/main\t[up to date]\n" +
		"Done\n"))
	for _, s := range rep.Refs {
		fmt.Printf("%c %s -> %s %s\n", s.Flag, s.From, s.To, s.Summary)
	}
	fmt.Println(rep.URL, rep.Done)
	// Output:
	// * HEAD -> refs/ci/7/test [new reference]
	// = refs/heads/main -> refs/heads/main [up to date]
	// https://git.example.com/r.git true
}

// A matrix job publishes its result ref; lock contention on the server and broken
// connections are retried under a one-minute budget.
func ExampleRunner() {
	p := &push.Runner{
		Dirs: []string{"."}, Env: os.Environ(),
		OnAttempt: func(a retry.Attempt) {
			if a.Err != nil && !a.Final {
				fmt.Fprintf(os.Stderr, "attempt %d: %v; retrying in %v\n", a.Number, a.Err, a.Delay)
			}
		},
	}
	res, err := p.Run(context.Background(), []string{"origin", "HEAD:refs/ci/1234/lint"}, os.Stdout, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	os.Exit(res.ExitCode)
}
