package push_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/refretry/refretry/failure"
	"github.com/refretry/refretry/push"
	"github.com/refretry/refretry/retry"
	"github.com/refretry/refretry/settings"
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

// Two matrix jobs publish their results on main; the other job's lands first, so
// this one's push is rejected as behind: with Rebase, its commit is replayed onto
// the new tip and pushed again, under the default budget. The remote here is a bare
// repository in a temporary directory; in CI it is the forge.
func ExampleRunner() {
	dir, err := os.MkdirTemp("", "refretry-push-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	// A fixed identity, and none of the user's git config (a signing key, say).
	env := append(os.Environ(), "GIT_AUTHOR_NAME=CI", "GIT_AUTHOR_EMAIL=ci@example.com",
		"GIT_COMMITTER_NAME=CI", "GIT_COMMITTER_EMAIL=ci@example.com",
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	git := func(args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			panic(fmt.Sprintf("git %s: %v\n%s", strings.Join(args, " "), err, out))
		}
		return string(out)
	}
	remote, lint, test := filepath.Join(dir, "results.git"), filepath.Join(dir, "lint"), filepath.Join(dir, "test")
	git("init", "-q", "--bare", "-b", "main", remote)
	git("init", "-q", "-b", "main", lint)
	git("-C", lint, "commit", "-q", "--allow-empty", "-m", "start")
	git("-C", lint, "push", "-q", remote, "main")
	git("clone", "-q", "file://"+remote, test) // origin, as the forge would be
	git("-C", lint, "commit", "-q", "--allow-empty", "-m", "lint: ok")
	git("-C", lint, "push", "-q", remote, "main")
	git("-C", test, "commit", "-q", "--allow-empty", "-m", "test: ok")

	p := &push.Runner{
		Config: settings.Config{
			Dirs: []string{test},
			Env:  env,
			OnAttempt: func(a retry.Attempt) {
				var f *failure.Error
				if errors.As(a.Err, &f) {
					fmt.Printf("attempt %d: %s\n", a.Number, f.Class)
				}
			},
		},
		Rebase: true,
	}
	var stderr bytes.Buffer // git's human table of the final attempt
	res, err := p.Run(context.Background(), []string{"origin", "main"}, nil, os.Stdout, &stderr)
	if err != nil {
		fmt.Printf("%v\n%s", err, stderr.Bytes())
	}
	fmt.Printf("exit code %d after %d attempts\n", res.ExitCode, res.Attempts)
	fmt.Print(git("--git-dir", remote, "log", "--format=%s", "main"))
	// Output:
	// attempt 1: behind
	// exit code 0 after 2 attempts
	// test: ok
	// lint: ok
	// start
}
