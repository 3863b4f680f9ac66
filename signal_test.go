//go:build unix

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/refretry/refretry/internal/harness/testutil"
)

// notingGit is a git for refretry that appends its pid to $GIT_PIDS and then becomes
// the real git ($REAL_GIT), so that a test knows every git refretry started.
const notingGit = `#!/bin/sh
echo $$ >>"$GIT_PIDS"
exec "$REAL_GIT" "$@"
`

// earlyCase is a command TestSignalEarly signals: what runs (refretry, or the shim
// as git) with which arguments, and whether it catches signals from the moment it
// has read its command line (every command but update-ref).
type earlyCase struct {
	name    string
	path    string
	args    []string
	catches bool
}

// earlySetup is TestSignalEarly's repositories: a client whose ref store is locked
// (update-ref and fetch wait for it) with a remote whose ref store is locked too
// (push waits for it) and whose main has moved (fetch has something to write), and
// the environment that runs every git through notingGit.
type earlySetup struct {
	c            *testutil.Repo
	remote       string
	locks        []string // held by the test
	env, shimEnv []string
	shimGit      string
}

func newEarlySetup(t *testing.T) earlySetup {
	t.Helper()
	c := testutil.NewRepo(t, testutil.NewGit(t), "reftable")
	s := earlySetup{c: c, remote: addOrigin(t, c, "reftable")}
	c.Run("push", "-q", "origin", "main")
	other := c.Clone()
	other.Run("commit", "-q", "--allow-empty", "-m", "theirs")
	other.Run("push", "-q", "origin", "main")
	c.Run("commit", "-q", "--allow-empty", "-m", "mine")
	wrapper := filepath.Join(t.TempDir(), "noting-git")
	if err := os.WriteFile(wrapper, []byte(notingGit), 0o755); err != nil {
		t.Fatal(err)
	}
	extra := []string{"REFRETRY_GIT=" + wrapper, "REAL_GIT=" + c.Git.Path}
	s.env = append(append([]string{}, c.Env...), extra...)
	s.shimGit, s.shimEnv = shimSetup(t, c)
	s.shimEnv = append(s.shimEnv, extra...)
	s.locks = []string{c.LockPath("refs/heads/main"), filepath.Join(s.remote, "reftable", "tables.list.lock")}
	for _, l := range s.locks {
		t.Cleanup(c.Hold(l))
	}
	return s
}

// state is what must not change: the refs of the client and the remote, and the
// lock files in each but those the test holds.
func (s earlySetup) state() string {
	locks := append(lockFiles(s.c.GitDir, s.locks...), lockFiles(s.remote, s.locks...)...)
	return fmt.Sprintf("%s\n%s\nlocks %v", refState(s.c, s.c.GitDir), refState(s.c, s.remote), locks)
}

// TestSignalEarly sends SIGINT or SIGTERM (in turn) to refretry as early as a caller
// can, at once after starting it, and, in other rounds, as soon as it has started its
// first git (the earliest moment at which it is seen running its command), rounds
// times each per command (testutil.Scale). No command could finish meanwhile: a lock
// it needs is held. A signal at once comes while Go starts refretry, before refretry
// has read its command line, and kills it; a later one is caught by every command but
// update-ref. Either way a shell reports 128 + n. A refretry that was killed had
// started no git (update-ref's single first attempt aside, whose git then finishes on
// its own); one that caught the signal exits 128 + n with every git it started ended.
// No ref changes, and no lock is left.
func TestSignalEarly(t *testing.T) {
	t.Parallel()
	s := newEarlySetup(t)
	rounds := testutil.Scale(t, 10, 50)
	for _, tc := range []earlyCase{
		{"update-ref", binary, []string{"refs/heads/early", s.c.Commit}, false},
		{"push", binary, []string{"push", "origin", "HEAD:refs/ci/early"}, true},
		{"fetch", binary, []string{"fetch", "origin"}, true},
		{"shim push", s.shimGit, []string{"push", "origin", "HEAD:refs/ci/early"}, true},
	} {
		want := s.state()
		for _, atFirstGit := range []bool{false, true} {
			caught := 0
			for i := range rounds {
				sig := []syscall.Signal{syscall.SIGINT, syscall.SIGTERM}[i%2]
				if signalEarly(t, s, tc, sig, atFirstGit) {
					caught++
				}
				if got := s.state(); got != want {
					t.Fatalf("%s, round %d (%v, at its first git %v): changed\n%s\nwant\n%s", tc.name, i, sig, atFirstGit, got, want)
				}
			}
			t.Logf("%s, signalled at its first git %v: %d of %d signals caught (exit 128 + n), the others killed it",
				tc.name, atFirstGit, caught, rounds)
		}
	}
}

// signalEarly runs one round of TestSignalEarly and reports whether refretry caught
// the signal.
func signalEarly(t *testing.T, s earlySetup, tc earlyCase, sig syscall.Signal, atFirstGit bool) bool {
	t.Helper()
	pids := filepath.Join(t.TempDir(), "pids")
	cmd := exec.Command(tc.path, tc.args...)
	cmd.Dir, cmd.Env = s.c.Dir, append(s.env[:len(s.env):len(s.env)], "GIT_PIDS="+pids)
	if tc.path == s.shimGit {
		cmd.Env = append(s.shimEnv[:len(s.shimEnv):len(s.shimEnv)], "GIT_PIDS="+pids)
	}
	var errOut syncBuffer
	cmd.Stderr = &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	for atFirstGit && len(startedGits(pids)) == 0 {
		select {
		case <-exited:
			t.Fatalf("%s ended before it started git: %v\n%s", tc.name, cmd.ProcessState, errOut.String())
		case <-time.After(time.Millisecond):
		}
	}
	cmd.Process.Signal(sig)
	<-exited
	started := startedGits(pids)
	ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
	switch {
	case ws.Exited() && ws.ExitStatus() == 128+int(sig):
		for _, p := range started {
			if alive(p) {
				t.Errorf("%s (%v): git %d outlived refretry", tc.name, sig, p)
			}
		}
		return true
	case ws.Signaled() && ws.Signal() == sig && (!tc.catches || len(started) == 0):
		for _, p := range started {
			waitGone(t, p) // update-ref's first attempt, left to finish on its own
		}
	default:
		t.Errorf("%s (%v): %v, with gits %v started; want exit %d, or killed by the signal before it started any git\n%s",
			tc.name, sig, cmd.ProcessState, started, 128+int(sig), errOut.String())
	}
	return false
}

// startedGits are the pids notingGit noted in the file pids.
func startedGits(pids string) []int {
	b, _ := os.ReadFile(pids)
	var started []int
	for _, f := range strings.Fields(string(b)) {
		if p, err := strconv.Atoi(f); err == nil {
			started = append(started, p)
		}
	}
	return started
}
