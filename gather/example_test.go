package gather_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/refretry/refretry/gather"
	"github.com/refretry/refretry/internal/harness/testutil"
	"github.com/refretry/refretry/settings"
)

// Each job of a matrix lands its commit on main through a gather: it stages the
// commit, and waits until some job's gather has put it on the branch. Here one job
// runs alone, so it is elected and gathers its own commit; the remote is a bare
// repository in a temporary directory.
func ExampleRunner() {
	dir, err := os.MkdirTemp("", "refretry-gather-example")
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
	remote, work := filepath.Join(dir, "remote.git"), filepath.Join(dir, "work")
	git("init", "-q", "--bare", "-b", "main", remote)
	git("init", "-q", "-b", "main", work)
	git("-C", work, "commit", "-q", "--allow-empty", "-m", "start")
	git("-C", work, "push", "-q", remote, "main")
	git("-C", work, "commit", "-q", "--allow-empty", "-m", "job 7's result")

	r := &gather.Runner{
		Config: settings.Config{
			Git:  testutil.ExampleGit(),
			Dirs: []string{work},
			Env:  env,
		},
		// git 2.40 or later: gather replays with merge-tree

	}
	// The arguments of `git push file://… HEAD:main`, which the gather lands.
	res, err := r.Run(context.Background(), []string{"file://" + remote, "HEAD:main"}, nil, nil, os.Stderr)
	if err != nil {
		fmt.Println(err) // a *ConflictError, *NotLandedError, *DiscardedError, *MovedError, …
		return
	}
	fmt.Println("landed:", res.Landed, "gathered by this job:", res.Gathered)
	// The landed commit says which staged commit it is.
	trailer := git("--git-dir", remote, "log", "-1", "--format=%(trailers:key="+gather.Trailer+",valueonly)", "main")
	fmt.Println("trailer names its id:", strings.TrimSpace(trailer) == res.ID)
	fmt.Print(git("--git-dir", remote, "log", "--format=%s", "main"))
	// Output:
	// landed: true gathered by this job: 1
	// trailer names its id: true
	// job 7's result
	// start
}

// An operator looks at what is staged for main on the remote, and discards a commit
// that must not land: its job, if it still waits, fails instead of waiting on.
func ExampleRunner_Discard() {
	dir, err := os.MkdirTemp("", "refretry-gather-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	remote, work := filepath.Join(dir, "remote.git"), filepath.Join(dir, "work")
	git := func(args ...string) {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			panic(fmt.Sprintf("git %s: %v\n%s", strings.Join(args, " "), err, out))
		}
	}
	git("init", "-q", "--bare", remote)
	git("init", "-q", work)
	git("-C", work, "-c", "user.name=CI", "-c", "user.email=ci@example.com",
		"commit", "-q", "--allow-empty", "-m", "job 7's result")
	// What a job that staged its commit and then died leaves: its staged ref,
	// refs/refretry/gather/<branch>/<id>, the id a UUIDv7 that says when.
	id := "0190a8c2-3f40-7000-8000-000000000007"
	git("-C", work, "push", "-q", remote, "HEAD:refs/refretry/gather/main/"+id)

	r := &gather.Runner{Config: settings.Config{Dirs: []string{work}, Env: os.Environ()}}
	ctx := context.Background()
	list := func() {
		l, err := r.List(ctx, remote, "main")
		if err != nil {
			panic(err)
		}
		for _, e := range l.Entries {
			fmt.Println(e.State, e.Ref, e.At.UTC().Format(time.RFC3339))
		}
	}
	list()
	if err := r.Discard(ctx, remote, "main", []string{id}, os.Stderr); err != nil {
		panic(err)
	}
	list()
	// Output:
	// staged refs/refretry/gather/main/0190a8c2-3f40-7000-8000-000000000007 2024-07-12T21:03:40Z
	// discarded refs/refretry/discarded/main/0190a8c2-3f40-7000-8000-000000000007 2024-07-12T21:03:40Z
}
