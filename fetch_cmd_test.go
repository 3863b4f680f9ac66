package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/refretry/refretry/internal/harness/testutil"
)

// fetchSetup is a clone whose remote's main and side have both moved since it was
// made: a fetch has two remote-tracking refs to update.
func fetchSetup(t *testing.T, g testutil.Git, backend string) *testutil.Repo {
	t.Helper()
	s := newPushSetup(t, g, backend)
	clone := s.client.Clone()
	s.client.Run("push", "-q", "--force", "origin", "HEAD:main", "HEAD:side")
	return clone
}

// TestFetchCommand: concurrent `refretry fetch origin` and `git fetch origin` through
// the shim all succeed on every git and backend, where plain git loses races.
func TestFetchCommand(t *testing.T) {
	t.Parallel()
	for _, bc := range backends(t) {
		t.Run(bc.git.Name()+"/"+bc.backend, func(t *testing.T) {
			t.Parallel()
			c := fetchSetup(t, bc.git, bc.backend)
			shimGit, shimEnv := shimSetup(t, c)
			n := testutil.Scale(t, 4, 8) // fetches of each kind at once
			results := make([]result, 2*n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Add(2)
				go func() { defer wg.Done(); results[i] = pushRun(t, c, nil, "refretry", "fetch", "origin") }()
				go func() { defer wg.Done(); results[n+i] = runCmd(t, c.Dir, shimEnv, "", shimGit, "fetch", "origin") }()
			}
			wg.Wait()
			for i, r := range results {
				if r.code != 0 {
					t.Errorf("fetch %d (shim %v): exit %d\n%s", i, i >= n, r.code, r.stderr)
				}
			}
			remote := c.Run("ls-remote", "origin", "refs/heads/main")
			if got := c.Run("rev-parse", "refs/remotes/origin/main"); !strings.HasPrefix(remote, got) {
				t.Errorf("origin/main is %s, the remote has %s", got, remote)
			}
		})
	}
}

// TestFetchNamesFetch: a fetch that gives up says so as a fetch, in every log format,
// and exits with git's code.
func TestFetchNamesFetch(t *testing.T) {
	t.Parallel()
	c := fetchSetup(t, testutil.NewGit(t), "reftable")
	lock := filepath.Join(c.GitDir, "reftable", "tables.list.lock")
	if err := os.WriteFile(lock, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	want := pushRun(t, c, nil, "git", "-c", "reftable.lockTimeout=0", "fetch", "origin")
	if want.code == 0 {
		t.Fatalf("git fetch succeeded with tables.list.lock held:\n%s", want.stderr)
	}
	formats := []struct {
		name string
		args []string
		env  []string
		want []string
	}{
		{"plain", nil, nil, []string{"refretry: attempt 1 failed (lock-contention on " + lock, "refretry: gave up after 2 attempts"}},
		{"text", []string{"--log-format=text"}, nil, []string{"\nrefretry: fetch gave up after 2 attempts"}},
		{"json", []string{"--log-format=json"}, nil, []string{`"msg":"attempt"`, `"command":"fetch","result":"gave-up"`}},
		{"github", nil, []string{"GITHUB_ACTIONS=true"}, []string{"::group::refretry: fetch, operation ", "::error title=refretry%3A fetch gave-up::refretry: fetch gave up after 2 attempts"}},
	}
	// The lock is held for good: git's own wait for it in each attempt would only add
	// seconds.
	noWait := testutil.NoLockWaitEnv
	for _, f := range formats {
		args := append(append(f.args, "--max-attempts=2", "--initial-delay=1ms"), "fetch", "origin")
		got := pushRun(t, c, append(f.env, noWait), "refretry", args...)
		if got.code != want.code {
			t.Errorf("%s: exit %d, git's was %d\n%s", f.name, got.code, want.code, got.stderr)
		}
		for _, w := range f.want {
			if !strings.Contains(got.stderr, w) {
				t.Errorf("%s: stderr lacks %q:\n%s", f.name, w, got.stderr)
			}
		}
		if strings.Contains(got.stderr, "update-ref") || strings.Contains(got.stderr, "push") {
			t.Errorf("%s: a fetch reported as another command:\n%s", f.name, got.stderr)
		}
	}
}

// TestFetchHelp: `refretry fetch --help` is refretry's help for the command (exit 0);
// `-h` is git fetch's usage, as for git (TestHelpFollowsGit has it with each git).
func TestFetchHelp(t *testing.T) {
	t.Parallel()
	c := testutil.NewRepo(t, testutil.NewGit(t), "files")
	help := pushRun(t, c, nil, "refretry", "fetch", "--help")
	if help.code != 0 || !strings.Contains(help.stdout, "Usage: refretry fetch") {
		t.Errorf("--help: exit %d\n%s%s", help.code, help.stdout, help.stderr)
	}
	want := pushRun(t, c, nil, "git", "fetch", "-h")
	got := pushRun(t, c, nil, "refretry", "fetch", "-h")
	if !strings.HasPrefix(want.stdout, "usage: git fetch") || got != want {
		t.Errorf("-h: got %s\nwant %s", fmt.Sprint(got), fmt.Sprint(want))
	}
}
