package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/refretry/refretry/internal/harness/fakegit/fakegittest"
	"github.com/refretry/refretry/internal/harness/testutil"
)

// These tests run refretry on repositories whose refs live outside them (git 2.54+:
// extensions.refStorage = <format>://<path>, here written by git init from
// GIT_REFERENCE_BACKEND): every lock refretry names, judges and queues on is in
// that store, which refretry reads from git, not in the git directory.

// TestRefStoreStaleLock: a two-hour-old lock in a store outside the repository
// stops refretry at once, as plain git stops: git's message and exit code, then one
// line naming the lock at its true path. No retry, no ref changed.
func TestRefStoreStaleLock(t *testing.T) {
	t.Parallel()
	g := testutil.NewGit(t)
	for _, backend := range []string{"files", "reftable"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			r := testutil.NewRepoOutside(t, g, backend)
			ref := "refs/heads/stale"
			lock := r.LockPath(ref)
			if !strings.HasPrefix(lock, r.Store+"/") {
				t.Fatalf("lock %s is not in the store %s", lock, r.Store)
			}
			r.Hold(lock)
			old := time.Now().Add(-2 * time.Hour)
			if err := os.Chtimes(lock, old, old); err != nil {
				t.Fatal(err)
			}
			before := r.Refs("refs/")
			want := runIn(t, r, "", "git", ref, r.Commit)
			got := runIn(t, r, "", "refretry", "--timeout", "30s", ref, r.Commit)
			if got.code != want.code || got.code != 128 {
				t.Errorf("exit %d, git's %d; want 128 from both", got.code, want.code)
			}
			gitLines, refretryLine, _ := strings.Cut(got.stderr, "refretry: ")
			if gitLines != want.stderr {
				t.Errorf("stderr before refretry's line:\n%s\nwant git's:\n%s", gitLines, want.stderr)
			}
			line := regexp.MustCompile(`\(age 2h0m[0-9]+s\)`).ReplaceAllString("refretry: "+refretryLine, "(age AGE)")
			wantLine := fmt.Sprintf("refretry: stale lock %s (age AGE): it is older than the stale-after limit of 2m0s; "+
				"make sure no git process is using this repository, then remove it: rm -f '%s'\n", lock, lock)
			if line != wantLine {
				t.Errorf("refretry's line:\n%s\nwant:\n%s", line, wantLine)
			}
			if got.stdout != "" || strings.Contains(got.stderr, "retrying") {
				t.Errorf("stdout %q, stderr %q: want nothing on stdout and no retry", got.stdout, got.stderr)
			}
			if after := r.Refs("refs/"); fmt.Sprint(after) != fmt.Sprint(before) {
				t.Errorf("refs changed: %v -> %v", before, after)
			}
		})
	}
}

// TestRefStoreContention: a lock held for a while in a store outside the repository
// is contention: refretry names it at its true path, retries, and lands the update.
func TestRefStoreContention(t *testing.T) {
	t.Parallel()
	g := testutil.NewGit(t)
	for _, backend := range []string{"files", "reftable"} {
		for _, form := range []string{"single", "stdin", "delete-packed"} {
			t.Run(backend+"/"+form, func(t *testing.T) {
				t.Parallel()
				r := testutil.NewRepoOutside(t, g, backend)
				ref := "refs/heads/held"
				args, stdin := []string{ref, r.Commit}, ""
				lock := r.LockPath(ref)
				if form == "stdin" {
					args, stdin = []string{"--stdin"}, "create "+ref+" "+r.Commit+"\n"
				}
				if form == "delete-packed" {
					r.Run("update-ref", ref, r.Commit)
					r.Run("pack-refs", "--all")
					args = []string{"-d", ref}
					if backend == "files" {
						lock = filepath.Join(r.Store, "packed-refs.lock")
					}
				}
				release := r.Hold(lock)
				res := runHeld(t, r, stdin, release, args...)
				if res.code != 0 || res.stdout != "" {
					t.Fatalf("exit %d stdout %q stderr %q", res.code, res.stdout, res.stderr)
				}
				if want := "refretry: attempt 1 failed (lock-contention on " + lock + ")"; !strings.Contains(res.stderr, want) {
					t.Errorf("stderr %q: want %q", res.stderr, want)
				}
				refs := r.Refs(ref)
				if form == "delete-packed" && len(refs) != 0 || form != "delete-packed" && refs[ref] != r.Commit {
					t.Errorf("refs after %s: %v", form, refs)
				}
			})
		}
	}
}

// TestRefStoreGroup: on reftable with its refs outside the repository, single-ref
// updates meet at the store's rendezvous (group commit is on by default there, as on
// any reftable repository) and all land.
func TestRefStoreGroup(t *testing.T) {
	t.Parallel()
	r := testutil.NewRepoOutside(t, testutil.NewGit(t), "reftable")
	var runs []*coalesceRun
	for i := range 4 {
		runs = append(runs, &coalesceRun{args: []string{fmt.Sprintf("refs/heads/g%d", i), r.Commit}})
	}
	runAll(t, r, runs) // returns once all four have queued at the store's rendezvous
	for i, c := range runs {
		if c.res.code != 0 || c.res.stderr != "" {
			t.Errorf("run %d: exit %d stderr %q", i, c.res.code, c.res.stderr)
		}
	}
	refs := r.Refs("refs/heads/")
	for i := range runs {
		if ref := fmt.Sprintf("refs/heads/g%d", i); refs[ref] != r.Commit {
			t.Errorf("%s = %q, want %s", ref, refs[ref], r.Commit)
		}
	}
}

// TestRefStoreGits counts the gits an uncontended single-ref update starts (the fake
// git's log, in front of git 2.55): one, update-ref, when the refs are in the
// repository, found without git; with the refs outside, git config first, which says
// where they are (docs/reliability.md, "Refs outside the repository").
func TestRefStoreGits(t *testing.T) {
	t.Parallel()
	g := testutil.NewGit(t)
	fake := fakegittest.Build(t, t.TempDir())
	for _, backend := range []string{"files", "reftable"} {
		for _, outside := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/outside=%v", backend, outside), func(t *testing.T) {
				t.Parallel()
				newRepo, want := testutil.NewRepo, "update-ref\n"
				if outside {
					newRepo, want = testutil.NewRepoOutside, "config\nupdate-ref\n"
				}
				r := newRepo(t, g, backend)
				dir := t.TempDir()
				log := filepath.Join(dir, "log")
				env := append(envFor(r), "REFRETRY_GIT="+fake, "REFRETRY_FAKEGIT_REAL="+g.Path,
					"REFRETRY_FAKEGIT_STATE="+filepath.Join(dir, "count"), "REFRETRY_FAKEGIT_LOG="+log)
				res := runCmd(t, r.Dir, env, "", binary, "refs/heads/one", r.Commit)
				if res.code != 0 || res.stdout != "" || res.stderr != "" {
					t.Fatalf("exit %d stdout %q stderr %q", res.code, res.stdout, res.stderr)
				}
				if b, err := os.ReadFile(log); err != nil || string(b) != want {
					t.Errorf("gits started: %q (%v), want %q", b, err, want)
				}
				if got := r.Refs("refs/heads/one")["refs/heads/one"]; got != r.Commit {
					t.Errorf("refs/heads/one = %q, want %s", got, r.Commit)
				}
			})
		}
	}
}
