package ci_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/refretry/refretry/ci"
)

// A command that met a held lock once, then succeeded, logged for people. Each
// attempt is recorded when it ends, the summary once at the end.
func Example() {
	op, err := ci.New(ci.Config{
		Command: "update-ref",
		Format:  "text",
		Stderr:  os.Stdout,
		ID:      "01930000-0000-7000-8000-000000000001", // empty: a new UUID
	})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	op.Attempt(ctx, ci.Attempt{Number: 1, Duration: time.Second, ExitCode: 128, Class: "lock-contention",
		Lock: "/repo/.git/refs/heads/main.lock", Delay: 12 * time.Millisecond})
	op.Attempt(ctx, ci.Attempt{Number: 2, Duration: 5 * time.Millisecond, Final: true})
	err = op.Finish(ctx, ci.Summary{Result: ci.ResultSuccess, Attempts: 2, Elapsed: 1017 * time.Millisecond,
		Updates: 1, Refs: []string{"refs/heads/main"}})
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// refretry: attempt 1 failed (lock-contention on /repo/.git/refs/heads/main.lock); retrying in 12ms
	// refretry: update-ref succeeded after 2 attempts in 1.017s (operation 01930000-0000-7000-8000-000000000001)
}

// The same records as JSON lines, the form a log file gets; docs/logging.md lists
// the keys. Git's stderr goes through the relay.
func Example_json() {
	op, err := ci.New(ci.Config{
		Command: "update-ref",
		Format:  "json",
		Stderr:  os.Stdout,
		ID:      "01930000-0000-7000-8000-000000000001",
		Now:     func() time.Time { return time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC) },
	})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	op.Attempt(ctx, ci.Attempt{Number: 1, Duration: 4 * time.Millisecond, ExitCode: 128, Class: "conflict",
		Error: "cannot lock ref 'refs/heads/new': reference already exists", Final: true})
	fmt.Fprintln(op.Relay(), "fatal: cannot lock ref 'refs/heads/new': reference already exists")
	err = op.Finish(ctx, ci.Summary{Result: ci.ResultFailed, ExitCode: 128, Attempts: 1, Elapsed: 5 * time.Millisecond,
		Class: "conflict", Error: "cannot lock ref 'refs/heads/new': reference already exists", Updates: -1})
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// {"time":"2026-11-30T12:00:00Z","level":"WARN","msg":"attempt","schema":1,"operation_id":"01930000-0000-7000-8000-000000000001","command":"update-ref","attempt":1,"duration_ms":4,"exit_code":128,"class":"conflict","error":"cannot lock ref 'refs/heads/new': reference already exists","final":true}
	// fatal: cannot lock ref 'refs/heads/new': reference already exists
	// {"time":"2026-11-30T12:00:00Z","level":"ERROR","msg":"summary","schema":1,"operation_id":"01930000-0000-7000-8000-000000000001","command":"update-ref","result":"failed","exit_code":128,"attempts":1,"elapsed_ms":5,"class":"conflict","error":"cannot lock ref 'refs/heads/new': reference already exists"}
}

// Detect is what the format "auto" becomes.
func ExampleDetect() {
	for _, env := range []map[string]string{{"GITHUB_ACTIONS": "true"}, {"GITLAB_CI": "true"}, {"CI": "true"}} {
		fmt.Println(ci.Detect(func(k string) string { return env[k] }))
	}
	// Output:
	// github
	// gitlab
	// text
}

// ParseFormat reads the name a flag or an environment variable gives.
func ExampleParseFormat() {
	for _, name := range []string{"JSON", " gitlab", "yaml"} {
		f, err := ci.ParseFormat(name)
		fmt.Printf("%q %v\n", f, err)
	}
	// Output:
	// "json" <nil>
	// "gitlab" <nil>
	// "" unknown log format "yaml" (want one of auto, text, json, github, gitlab)
}
