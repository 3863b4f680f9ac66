package ci_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/refretry/refretry/ci"
)

// An operation that met a held lock once, logged in the text format.
func Example() {
	op, err := ci.New(ci.Config{Command: "update-ref", Format: ci.Text, Stderr: os.Stdout, ID: "01930000-0000-7000-8000-000000000001"})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	op.Attempt(ctx, ci.Attempt{Number: 1, Duration: time.Second, ExitCode: 128, Class: "lock-contention",
		Lock: "/repo/.git/refs/heads/main.lock", Delay: 12 * time.Millisecond})
	op.Attempt(ctx, ci.Attempt{Number: 2, Duration: 5 * time.Millisecond, Final: true})
	op.Finish(ctx, ci.Summary{Result: ci.ResultSuccess, Attempts: 2, Elapsed: 1017 * time.Millisecond, Updates: 1})
	// Output:
	// refretry: attempt 1 failed (lock-contention on /repo/.git/refs/heads/main.lock); retrying in 12ms
	// refretry: update-ref succeeded after 2 attempts in 1.017s (operation 01930000-0000-7000-8000-000000000001)
}

// Auto finds the CI system from the environment a job step has.
func ExampleDetect() {
	for _, env := range []map[string]string{{"GITHUB_ACTIONS": "true"}, {"GITLAB_CI": "true"}, {"CI": "true"}} {
		fmt.Println(ci.Auto.Resolve(func(k string) string { return env[k] }))
	}
	// Output:
	// github
	// gitlab
	// text
}
