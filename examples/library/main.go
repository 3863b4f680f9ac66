// Command library records CI results as refs with refretry's packages used as a
// library: transaction runs `git update-ref` and retries lock contention under a
// retry.Policy chosen here, and errors.As tells a lost race on a ref from a busy lock.
//
//	go run ./examples/library -C <repository> <ref>=<commit> [<ref>=<commit> ...]
//
// Every ref is created in one transaction (update-ref --stdin): all of them or none.
// A ref that already exists is a conflict, reported and not retried; contention on the
// repository's lock is retried for up to 20 seconds.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/refretry/refretry/failure"
	"github.com/refretry/refretry/retry"
	"github.com/refretry/refretry/settings"
	"github.com/refretry/refretry/transaction"
)

func main() {
	dir := flag.String("C", ".", "the repository")
	git := flag.String("git", "git", "the git executable")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(record(ctx, *git, *dir, flag.Args()))
}

func record(ctx context.Context, git, dir string, pairs []string) int {
	if len(pairs) == 0 {
		fmt.Fprintln(os.Stderr, "usage: library [-C dir] <ref>=<commit>...")
		return 2
	}
	// The transaction, in update-ref's --stdin language: "create" fails if the ref exists.
	var input bytes.Buffer
	for _, p := range pairs {
		ref, oid, ok := strings.Cut(p, "=")
		if !ok {
			fmt.Fprintf(os.Stderr, "library: %q is not <ref>=<commit>\n", p)
			return 2
		}
		fmt.Fprintf(&input, "create %s %s\n", ref, oid)
	}

	policy := retry.DefaultPolicy()
	policy.Timeout = 20 * time.Second
	policy.MaxAttempts = 0 // the deadline alone bounds it
	r := &transaction.Runner{
		Config: settings.Config{
			Git:  git,
			Dirs: []string{dir},
			Env:  os.Environ(),
			// Called only once something has failed on a lock.
			Settings: func() (settings.Settings, error) {
				return settings.Settings{Policy: policy, StaleAfter: 2 * time.Minute}, nil
			},
			OnAttempt: func(a retry.Attempt) {
				if a.Err != nil && !a.Final {
					fmt.Fprintf(os.Stderr, "library: attempt %d: %v; next in %v\n", a.Number, a.Err, a.Delay.Round(time.Millisecond))
				}
			},
		},
	}
	res, err := r.Run(ctx, []string{"-m", "CI result", "--stdin"}, &input, os.Stdout, os.Stderr)

	var te *failure.Error
	var exhausted *retry.ExhaustedError
	switch {
	case err == nil:
		fmt.Printf("recorded %d refs\n", len(pairs))
	case errors.As(err, &exhausted):
		fmt.Fprintf(os.Stderr, "library: still contended after %d attempts in %v\n", exhausted.Attempts, exhausted.Elapsed.Round(time.Millisecond))
	case errors.As(err, &te) && te.Class == failure.Conflict:
		fmt.Fprintf(os.Stderr, "library: conflict, not retried: %s\n", te.Message)
	default: // git could not be started, say: res.ExitCode is then 127
		fmt.Fprintf(os.Stderr, "library: %v\n", err)
	}
	return res.ExitCode
}
