package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/refretry/refretry/internal/testutil"
)

// TestBatchUpdatesLockHeld: with --batch-updates, plain git turns a ref lock held by
// another process into a "rejected … reference already exists" line and exit 0,
// leaving the ref unwritten. refretry resubmits that update until the lock goes: the
// ref lands, no rejected line, exit 0.
func TestBatchUpdatesLockHeld(t *testing.T) {
	t.Parallel()
	g := testutil.NewGit(t)
	for _, backend := range []string{"files", "reftable"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			r := testutil.NewRepo(t, g, backend)
			input := fmt.Sprintf("update refs/heads/x %s\nupdate refs/heads/y %s\n", r.Commit, r.Commit)

			plain := r.Clone()
			releasePlain := plain.Hold(plain.LockPath("refs/heads/x"))
			p := runIn(t, plain, input, "git", "--stdin", "--batch-updates")
			releasePlain()
			if backend == "files" && (p.code != 0 || !strings.HasPrefix(p.stdout, "rejected refs/heads/x ")) {
				t.Fatalf("plain git did not reject the locked ref: exit %d\n%s%s", p.code, p.stdout, p.stderr)
			}

			release := r.Hold(r.LockPath("refs/heads/x"))
			time.AfterFunc(1500*time.Millisecond, release)
			got := runIn(t, r, input, "refretry", "--stdin", "--batch-updates")
			if got.code != 0 || got.stdout != "" {
				t.Errorf("exit %d, stdout %q\n%s", got.code, got.stdout, got.stderr)
			}
			for _, line := range strings.Split(strings.TrimSpace(got.stderr), "\n") {
				if line != "" && !strings.HasPrefix(line, "refretry: attempt ") {
					t.Errorf("stderr line %q: want only refretry's retry lines", line)
				}
			}
			refs := r.Refs("refs/heads/")
			if refs["refs/heads/x"] != r.Commit || refs["refs/heads/y"] != r.Commit {
				t.Errorf("refs %v", refs)
			}
		})
	}
}

// TestBatchUpdatesFinalAtOnce: rejections that are not a held lock (a ref that
// exists, a wrong old value, a missing ref) are git's verdict: one attempt, git's
// bytes and exit code. With a lock held meanwhile on another ref, that ref lands and
// the report is what git prints when the lock is free.
func TestBatchUpdatesFinalAtOnce(t *testing.T) {
	t.Parallel()
	g := testutil.NewGit(t)
	for _, backend := range []string{"files", "reftable"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			r := testutil.NewRepo(t, g, backend)
			r.Run("update-ref", "refs/heads/exists", r.Commit)
			wrong := strings.Repeat("1", len(r.Commit))
			input := fmt.Sprintf("update refs/heads/a %s\ncreate refs/heads/exists %s\nupdate refs/heads/b %s %s\ndelete refs/heads/gone %s\n",
				r.Commit, r.Commit, r.Commit, wrong, r.Commit)
			want := runIn(t, r.Clone(), input, "git", "--stdin", "--batch-updates")
			if want.code != 0 || strings.Count(want.stdout, "rejected ") != 3 {
				t.Fatalf("git: exit %d\n%s%s", want.code, want.stdout, want.stderr)
			}
			got := runIn(t, r.Clone(), input, "refretry", "--stdin", "--batch-updates")
			if got != want {
				t.Errorf("no lock held:\nrefretry %d\n%s%s\ngit %d\n%s%s", got.code, got.stdout, got.stderr, want.code, want.stdout, want.stderr)
			}
			if backend != "files" {
				return // one lock for every ref: the whole batch waits, as in the test above
			}
			held := r.Clone()
			release := held.Hold(held.LockPath("refs/heads/a"))
			time.AfterFunc(1500*time.Millisecond, release)
			got = runIn(t, held, input, "refretry", "--stdin", "--batch-updates")
			if got.code != want.code || got.stdout != want.stdout || !strings.HasSuffix(got.stderr, want.stderr) {
				t.Errorf("lock held on a:\nrefretry %d\n%s%s\nwant git's %d\n%s%s", got.code, got.stdout, got.stderr, want.code, want.stdout, want.stderr)
			}
			if held.Refs("refs/heads/a")["refs/heads/a"] != r.Commit {
				t.Errorf("refs/heads/a did not land")
			}
		})
	}
}
