package fetch_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/refretry/refretry/failure"
	"github.com/refretry/refretry/fetch"
	"github.com/refretry/refretry/retry"
	"github.com/refretry/refretry/settings"
)

func ExampleClassify() {
	// A ref was locked by another process: retried.
	e := fetch.Classify(1, []byte("From /srv/results\n"+
		"error: cannot lock ref 'refs/remotes/origin/b3': Unable to create '/work/.git/refs/remotes/origin/b3.lock': File exists.\n"+
		" ! aa25968..05d111e  b3         -> origin/b3  (unable to update local ref)\n"))
	fmt.Println(e.Class, e.Class.Retryable(), e.Lock.Path)

	// Another fetch moved the ref first: retried.
	e = fetch.Classify(1, []byte("error: cannot lock ref 'refs/remotes/origin/b2': "+
		"is at 05d111e482e6d0736ef43a955e349439447142f3 but expected aa25968fabe89b3c78e5972e671269fec76274f9\n"))
	fmt.Println(e.Class, e.Class.Retryable(), e.Moved.Ref)

	// The same lock, but git also named a cause that another attempt cannot get past.
	e = fetch.Classify(1, []byte("error: cannot lock ref 'refs/remotes/origin/b3': Unable to create '/work/.git/refs/remotes/origin/b3.lock': File exists.\n"+
		" ! [rejected]        v1 -> v1  (would clobber existing tag)\n"))
	fmt.Println(e.Class, e.Class.Retryable())
	// Output:
	// lock-contention true /work/.git/refs/remotes/origin/b3.lock
	// lost-race true refs/remotes/origin/b2
	// rejected false
}

// A job fetches the results other jobs published; a ref the remote does not have is
// a failure no retry can fix, so it ends the run after one attempt with git's exit
// code.
func ExampleRunner() {
	dir, err := os.MkdirTemp("", "refretry-fetch-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	results, work := filepath.Join(dir, "results"), filepath.Join(dir, "work")
	git := func(args ...string) string {
		out, err := exec.Command("git", args...).Output()
		if err != nil {
			panic(fmt.Sprint("git ", args, ": ", err))
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q", results)
	git("init", "-q", work)
	git("-C", results, "-c", "user.name=CI", "-c", "user.email=ci@example.com",
		"commit", "-q", "--allow-empty", "-m", "lint passed")
	git("-C", results, "update-ref", "refs/ci/42/lint", "HEAD")

	r := &fetch.Runner{
		Config: settings.Config{
			Dirs: []string{work},
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
	res, err := r.Run(ctx, []string{results, "refs/ci/*:refs/ci/*"}, nil, io.Discard, io.Discard)
	fmt.Println(res.ExitCode, res.Attempts, err)
	fmt.Println(git("-C", work, "log", "--format=%s", "refs/ci/42/lint"))

	res, err = r.Run(ctx, []string{results, "refs/ci/43/lint"}, nil, io.Discard, io.Discard)
	var f *failure.Error
	if errors.As(err, &f) {
		fmt.Println(res.ExitCode, res.Attempts, f.Class, f.Class.Retryable())
	}
	// Output:
	// 0 1 <nil>
	// lint passed
	// 128 1 not-found false
}
