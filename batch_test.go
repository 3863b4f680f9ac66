package main

import (
	"bytes"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/refretry/refretry/internal/harness/testutil"
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

			got := runHeld(t, r, input, r.Hold(r.LockPath("refs/heads/x")), "--stdin", "--batch-updates")
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
			got = runHeld(t, held, input, held.Hold(held.LockPath("refs/heads/a")), "--stdin", "--batch-updates")
			if got.code != want.code || got.stdout != want.stdout || !strings.HasSuffix(got.stderr, want.stderr) {
				t.Errorf("lock held on a:\nrefretry %d\n%s%s\nwant git's %d\n%s%s", got.code, got.stdout, got.stderr, want.code, want.stdout, want.stderr)
			}
			if held.Refs("refs/heads/a")["refs/heads/a"] != r.Commit {
				t.Errorf("refs/heads/a did not land")
			}
		})
	}
}

// TestBatchUpdatesLockHeldLayouts: the held-lock retry of --batch-updates, where git
// spells the lock's path differently from refretry: a bare repository entered by -C
// or by cd (git writes "<gitdir>/./refs/heads/x.lock"), by GIT_DIR, and a linked
// worktree whose .git is a file (the lock is in the common directory). The held ref
// lands, no rejected line, exit 0.
func TestBatchUpdatesLockHeldLayouts(t *testing.T) {
	t.Parallel()
	g := testutil.NewGit(t)
	type layout struct {
		dir  string   // where the command runs
		args []string // refretry's options before the update-ref arguments
		env  []string
		lock string // the ref's lock file
		read *testutil.Repo
	}
	layouts := map[string]func(t *testing.T) layout{
		"bare -C": func(t *testing.T) layout {
			r, bare := bareOf(t, g)
			return layout{dir: filepath.Dir(bare), args: []string{"-C", filepath.Base(bare)}, lock: filepath.Join(bare, "refs", "heads", "x.lock"), read: r}
		},
		"bare cd": func(t *testing.T) layout {
			r, bare := bareOf(t, g)
			return layout{dir: bare, lock: filepath.Join(bare, "refs", "heads", "x.lock"), read: r}
		},
		"bare GIT_DIR": func(t *testing.T) layout {
			r, bare := bareOf(t, g)
			return layout{dir: filepath.Dir(bare), env: []string{"GIT_DIR=" + filepath.Base(bare)}, lock: filepath.Join(bare, "refs", "heads", "x.lock"), read: r}
		},
		"worktree": func(t *testing.T) layout {
			r := testutil.NewRepo(t, g, "files")
			wt := filepath.Join(t.TempDir(), "wt")
			r.Run("worktree", "add", "-q", "--detach", wt)
			return layout{dir: wt, lock: r.LockPath("refs/heads/x"), read: r}
		},
	}
	for name, make := range layouts {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			l := make(t)
			oid := l.read.Commit
			input := fmt.Sprintf("update refs/heads/x %s\nupdate refs/heads/y %s\n", oid, oid)
			cmd := exec.Command(binary, append(l.args, "--stdin", "--batch-updates")...)
			cmd.Dir, cmd.Env = l.dir, append(envFor(l.read), l.env...)
			cmd.Stdin = strings.NewReader(input)
			var out bytes.Buffer
			var errOut syncBuffer
			cmd.Stdout, cmd.Stderr = &out, &errOut
			let := letGoAfterRetry(&errOut, l.read.Hold(l.lock))
			err := cmd.Run()
			if !let() {
				t.Errorf("refretry ended before the lock was let go")
			}
			if err != nil || out.Len() != 0 {
				t.Fatalf("%v, stdout %q\n%s", err, out.String(), errOut.String())
			}
			for _, line := range strings.Split(strings.TrimSpace(errOut.String()), "\n") {
				if line != "" && !strings.HasPrefix(line, "refretry: attempt ") {
					t.Errorf("stderr line %q: want only refretry's retry lines", line)
				}
			}
			if !strings.Contains(errOut.String(), "refretry: attempt 1 failed") {
				t.Errorf("no retry: the lock was not held when refretry ran?\n%s", errOut.String())
			}
			refs := l.read.Refs("refs/heads/")
			if refs["refs/heads/x"] != oid || refs["refs/heads/y"] != oid {
				t.Errorf("refs %v", refs)
			}
		})
	}
}

// bareOf is a bare clone of a new files repository, and a Repo that reads it.
func bareOf(t *testing.T, g testutil.Git) (*testutil.Repo, string) {
	t.Helper()
	r := testutil.NewRepo(t, g, "files")
	bare := filepath.Join(t.TempDir(), "b.git")
	r.Run("clone", "-q", "--bare", r.Dir, bare)
	b := *r
	b.Dir, b.GitDir = bare, bare
	return &b, bare
}

// TestBatchUpdatesEveryRejection: every reason git 2.55 rejects an update for under
// --batch-updates (reference already exists, incorrect old value provided, reference
// does not exist, refname conflict in both directions, expected symref but found
// regular ref, invalid new value provided, a symbolic ref's missing target, a
// symref-verify that does not match), with no lock held: one attempt, and git's bytes
// (exit code, stdout, stderr), with and without -z, on both backends. ("reference
// conflict due to case-insensitive filesystem" needs such a file system.)
func TestBatchUpdatesEveryRejection(t *testing.T) {
	t.Parallel()
	g := testutil.NewGit(t)
	for _, backend := range []string{"files", "reftable"} {
		for _, nul := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/z=%v", backend, nul), func(t *testing.T) {
				t.Parallel()
				r := testutil.NewRepo(t, g, backend)
				head, tree := r.Commit, r.Run("rev-parse", "HEAD^{tree}")
				for _, ref := range []string{"a1", "a2", "a3", "a4", "d/e"} {
					r.Run("update-ref", "refs/heads/"+ref, head)
				}
				r.Run("symbolic-ref", "refs/heads/symbolic", "refs/heads/non-existent")
				r.Run("symbolic-ref", "refs/heads/s2", "refs/heads/main")
				wrong := strings.Repeat("1", len(head))
				cmds := [][]string{
					{"update", "refs/heads/b", head, ""},
					{"delete", "refs/heads/symbolic", head},
					{"create", "refs/heads/a1", head},
					{"update", "refs/heads/a2", head, wrong},
					{"delete", "refs/heads/gone", head},
					{"create", "refs/heads/d", head},
					{"update", "refs/heads/t", tree, ""},
					{"option", "no-deref"},
					{"symref-verify", "refs/heads/a3", "refs/heads/main"},
					{"update", "refs/heads/a4/b", head, ""},
					{"option", "no-deref"},
					{"symref-verify", "refs/heads/s2", "refs/heads/other"},
					{"update", "refs/heads/c", head, ""},
				}
				input := stdinOf(cmds, nul)
				args := []string{"--stdin", "--batch-updates"}
				if nul {
					args = append(args, "-z")
				}
				want := runIn(t, r.Clone(), input, "git", args...)
				if want.code != 0 || strings.Count(want.stdout, "rejected ") != 9 {
					t.Fatalf("git: exit %d\n%s%s", want.code, want.stdout, want.stderr)
				}
				for _, reason := range []string{"reference already exists", "incorrect old value provided", "reference does not exist",
					"refname conflict", "expected symref but found regular ref", "invalid new value provided"} {
					if !strings.Contains(want.stdout, " "+reason+"\n") {
						t.Errorf("git printed no %q rejection:\n%s", reason, want.stdout)
					}
				}
				c := r.Clone()
				got := runIn(t, c, input, "refretry", args...)
				if got != want {
					t.Errorf("refretry %d\n%s%s\ngit %d\n%s%s", got.code, got.stdout, got.stderr, want.code, want.stdout, want.stderr)
				}
				refs := c.Refs("refs/heads/")
				if refs["refs/heads/b"] != head || refs["refs/heads/c"] != head || refs["refs/heads/a1"] != head || refs["refs/heads/t"] != "" {
					t.Errorf("refs after refretry: %v", refs)
				}
				if backend != "files" {
					return // one lock for every ref: the whole batch waits
				}
				// With b's lock held for a while: b is resubmitted until it lands, and
				// the report is git's, in git's order (not the input's), after
				// refretry's retry lines.
				held := r.Clone()
				got = runHeld(t, held, input, held.Hold(held.LockPath("refs/heads/b")), args...)
				if got.code != want.code || got.stdout != want.stdout || !strings.HasSuffix(got.stderr, want.stderr) ||
					!strings.HasPrefix(got.stderr, "refretry: attempt 1 failed") {
					t.Errorf("lock held on b:\nrefretry %d\n%s%s\nwant git's %d\n%s%s", got.code, got.stdout, got.stderr, want.code, want.stdout, want.stderr)
				}
				if held.Refs("refs/heads/b")["refs/heads/b"] != head {
					t.Errorf("refs/heads/b did not land")
				}
			})
		}
	}
}

// TestBatchUpdatesSymref is the symbolic-ref example of the issue: git's rejection
// names the target, its detail the symref; refretry prints both, as git does.
func TestBatchUpdatesSymref(t *testing.T) {
	t.Parallel()
	g := testutil.NewGit(t)
	for _, backend := range []string{"files", "reftable"} {
		for _, nul := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/z=%v", backend, nul), func(t *testing.T) {
				t.Parallel()
				r := testutil.NewRepo(t, g, backend)
				r.Run("symbolic-ref", "refs/heads/symbolic", "refs/heads/non-existent")
				input := stdinOf([][]string{{"delete", "refs/heads/symbolic", r.Commit}}, nul)
				args := []string{"--stdin", "--batch-updates"}
				if nul {
					args = append(args, "-z")
				}
				want := runIn(t, r.Clone(), input, "git", args...)
				if !strings.HasPrefix(want.stdout, "rejected refs/heads/non-existent ") ||
					!strings.Contains(want.stderr, "error: cannot lock ref 'refs/heads/symbolic': unable to resolve reference 'refs/heads/non-existent'") {
					t.Fatalf("git: exit %d\n%s%s", want.code, want.stdout, want.stderr)
				}
				if got := runIn(t, r, input, "refretry", args...); got != want {
					t.Errorf("refretry %d\n%s%s\ngit %d\n%s%s", got.code, got.stdout, got.stderr, want.code, want.stdout, want.stderr)
				}
			})
		}
	}
}

// stdinOf writes update-ref --stdin commands, in the text format or with -z. A
// command's trailing "" is an empty old value (text: left out).
func stdinOf(cmds [][]string, nul bool) string {
	var b strings.Builder
	for _, c := range cmds {
		if !nul {
			b.WriteString(strings.TrimRight(strings.Join(c, " "), " ") + "\n")
			continue
		}
		// -z: the verb and the first argument are separated by a space, every
		// argument ends with NUL.
		b.WriteString(c[0])
		for i, a := range c[1:] {
			if i == 0 {
				b.WriteString(" ")
			}
			b.WriteString(a + "\x00")
		}
		if len(c) == 1 {
			b.WriteString("\x00")
		}
	}
	return b.String()
}
