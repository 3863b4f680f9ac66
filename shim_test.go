//go:build unix

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/refretry/refretry/internal/harness/testutil"
	"github.com/refretry/refretry/internal/shim"
)

// shimSetup installs refretry (binary) as git in a directory of its own and returns
// the repository's environment with that directory first on PATH, then the directory
// of the repository's git, without REFRETRY_GIT: the shim must find the real git itself.
func shimSetup(t *testing.T, r *testutil.Repo, extraDirs ...string) (shimGit string, env []string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "shim")
	if _, err := shim.Install(dir, binary); err != nil {
		t.Fatal(err)
	}
	dirs := append(append([]string{dir}, extraDirs...), filepath.Dir(r.Git.Path), os.Getenv("PATH"))
	env = slices.DeleteFunc(slices.Clone(r.Env), func(kv string) bool {
		return strings.HasPrefix(kv, "PATH=") || strings.HasPrefix(kv, "REFRETRY_GIT=")
	})
	return filepath.Join(dir, "git"), append(env, "PATH="+strings.Join(dirs, string(filepath.ListSeparator)))
}

// runCmd runs path with args in dir and returns what it left behind; a run that does not
// end within a minute (a shim calling itself, say) fails the test. The group-commit
// storms that once made examples/collect-results.sh outlive it run at their full size
// only in the stress tier, which starts them from a refretry built without the race
// detector (docs/testing.md).
func runCmd(t *testing.T, dir string, env []string, stdin string, path string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Dir, cmd.Env, cmd.Stdin = dir, env, strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("%s %q: %v", path, args, err)
	}
	if ctx.Err() != nil {
		t.Fatalf("%s %q did not finish: %s", path, args, errOut.String())
	}
	return result{out.String(), errOut.String(), code}
}

// TestShimPassthrough compares calls that are not update-ref, through the shim and to
// the real git directly: the same stdout, stderr and exit code, and the same process.
func TestShimPassthrough(t *testing.T) {
	t.Parallel()
	r := testutil.NewRepo(t, testutil.NewGit(t), "files")
	shimGit, env := shimSetup(t, r)
	for _, args := range [][]string{
		{"rev-parse", "HEAD"},
		{"rev-parse", "--verify", "refs/heads/nope"},
		{"status", "--porcelain=v2", "--branch"},
		{"-c", "core.abbrev=12", "log", "--oneline", "-1"},
		{"--no-pager", "-C", ".", "show-ref"},
		{"--frobnicate"},
		{"--exec-path"},
		{},
		{"--version"},
		{"hash-object", "--stdin"},
		{"no-such-command"},
		{"-C"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			t.Parallel()
			want := runCmd(t, r.Dir, env, "some input\n", r.Git.Path, args...)
			got := runCmd(t, r.Dir, env, "some input\n", shimGit, args...)
			if got != want {
				t.Errorf("through the shim:\n%+v\nwant (git directly):\n%+v", got, want)
			}
		})
	}
	t.Run("same process", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		// A shell alias runs as git's child: its $PPID is git's process id.
		cmd := exec.CommandContext(ctx, shimGit, "-c", "alias.ppid=!echo $PPID", "ppid")
		cmd.Dir, cmd.Env = r.Dir, env
		out, err := cmd.Output()
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.TrimSpace(string(out)); got != strconv.Itoa(cmd.Process.Pid) {
			t.Errorf("git ran as process %s, the shim was %d: not exec'd in place", got, cmd.Process.Pid)
		}
	})
}

// TestShimUpdateRef runs update-ref through the shim with git's global options, which
// must keep their meaning.
func TestShimUpdateRef(t *testing.T) {
	t.Parallel()
	for _, bc := range backends(t) {
		t.Run(bc.git.Name()+"/"+bc.backend, func(t *testing.T) {
			t.Parallel()
			r := testutil.NewRepo(t, bc.git, bc.backend)
			shimGit, env := shimSetup(t, r)
			elsewhere := t.TempDir()
			check := func(res result, what string) {
				t.Helper()
				if res.code != 0 || res.stdout != "" || res.stderr != "" {
					t.Fatalf("%s: %+v", what, res)
				}
			}
			// -C and -c: core.logAllRefUpdates=always gives a tag a reflog, which it
			// does not get by default.
			check(runCmd(t, elsewhere, env, "", shimGit, "-C", r.Dir, "-c", "core.logAllRefUpdates=always",
				"update-ref", "-m", "via shim", "refs/tags/logged", r.Commit), "-C -c update-ref")
			check(runCmd(t, elsewhere, env, "", shimGit, "-C", r.Dir, "update-ref", "refs/tags/unlogged", r.Commit), "-C update-ref")
			if runCmd(t, r.Dir, env, "", r.Git.Path, "reflog", "exists", "refs/tags/logged").code != 0 {
				t.Errorf("-c core.logAllRefUpdates=always did not reach git")
			}
			if runCmd(t, r.Dir, env, "", r.Git.Path, "reflog", "exists", "refs/tags/unlogged").code == 0 {
				t.Errorf("a tag got a reflog without -c")
			}
			// --git-dir, from a directory outside the repository, both spellings.
			check(runCmd(t, elsewhere, env, "", shimGit, "--git-dir", r.GitDir, "update-ref", "refs/heads/gd1", r.Commit), "--git-dir")
			check(runCmd(t, elsewhere, env, "", shimGit, "--git-dir="+r.GitDir, "--no-optional-locks", "update-ref", "refs/heads/gd2", r.Commit), "--git-dir=")
			// --stdin through the shim.
			check(runCmd(t, r.Dir, env, "create refs/heads/s1 "+r.Commit+"\ncreate refs/heads/s2 "+r.Commit+"\n",
				shimGit, "update-ref", "--stdin"), "--stdin")
			refs := r.Refs("refs/")
			for _, ref := range []string{"refs/tags/logged", "refs/tags/unlogged", "refs/heads/gd1", "refs/heads/gd2", "refs/heads/s1", "refs/heads/s2"} {
				if refs[ref] != r.Commit {
					t.Errorf("%s = %q, want %s", ref, refs[ref], r.Commit)
				}
			}
			// A failure is git's, byte for byte.
			want := runCmd(t, r.Dir, env, "", r.Git.Path, "update-ref", "refs/heads/s1", r.Commit, strings.Repeat("0", len(r.Commit)))
			got := runCmd(t, r.Dir, env, "", shimGit, "update-ref", "refs/heads/s1", r.Commit, strings.Repeat("0", len(r.Commit)))
			if got != want || got.code == 0 {
				t.Errorf("a refused update through the shim:\n%+v\nwant:\n%+v", got, want)
			}
		})
	}
}

// TestShimRetries makes the real git fail on a lock twice (the fake git replaying a
// captured failure) and checks that the shim retried as refretry does.
func TestShimRetries(t *testing.T) {
	t.Parallel()
	g := testutil.NewGit(t)
	r := testutil.NewRepo(t, g, "files")
	fakeDir := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(fakeDir, "git"), "./internal/harness/fakegit")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the fake git: %v\n%s", err, out)
	}
	fixture, err := filepath.Abs(filepath.Join("testdata", "stderr", "2.55-files-lock-ref-single.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(t.TempDir(), "count")
	// The fake git is the next git on PATH after the shim.
	shimGit, env := shimSetup(t, r, fakeDir)
	env = append(env, "REFRETRY_FAKEGIT_REAL="+g.Path, "REFRETRY_FAKEGIT_STATE="+state,
		"REFRETRY_FAKEGIT_FIXTURE="+fixture, "REFRETRY_FAKEGIT_TIMES=2", "REFRETRY_FAKEGIT_REPO="+r.Dir,
		"REFRETRY_INITIAL_DELAY=1ms", "REFRETRY_MAX_DELAY=5ms")
	res := runCmd(t, r.Dir, env, "", shimGit, "-c", "user.name=x", "update-ref", "refs/heads/x", r.Commit)
	if res.code != 0 {
		t.Fatalf("update-ref through the shim: %+v", res)
	}
	if n := strings.Count(res.stderr, "refretry: attempt "); n != 2 {
		t.Errorf("%d retry lines, want 2:\n%s", n, res.stderr)
	}
	if b, _ := os.ReadFile(state); len(b) != 3 {
		t.Errorf("update-ref ran %d times, want 3", len(b))
	}
	if got := r.Refs("refs/heads/x")["refs/heads/x"]; got != r.Commit {
		t.Errorf("refs/heads/x = %q", got)
	}
}

// TestShimConcurrent runs many update-ref calls through the shim at once on reftable,
// where plain git fails a good share of them on tables.list.lock.
func TestShimConcurrent(t *testing.T) {
	t.Parallel()
	r := testutil.NewRepo(t, testutil.NewGit(t), "reftable")
	shimGit, env := shimSetup(t, r)
	const writers = 24
	var wg sync.WaitGroup
	results := make([]result, writers)
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = runCmd(t, r.Dir, env, "", shimGit, "update-ref", fmt.Sprintf("refs/heads/w/%d", i), r.Commit)
		}()
	}
	wg.Wait()
	for i, res := range results {
		if res.code != 0 {
			t.Errorf("writer %d: %+v", i, res)
		}
	}
	if n := len(r.Refs("refs/heads/w/")); n != writers {
		t.Errorf("%d refs written, want %d", n, writers)
	}
}

// TestShimUnderRefretry runs refretry itself with the shim first on PATH: its git is
// then the shim, which must hand the call straight to the real git rather than run a
// second refretry (which would queue behind the first for the repository's line).
func TestShimUnderRefretry(t *testing.T) {
	t.Parallel()
	r := testutil.NewRepo(t, testutil.NewGit(t), "reftable")
	_, env := shimSetup(t, r)
	env = append(env, "REFRETRY_LOG_FORMAT=json")
	res := runCmd(t, r.Dir, env, "", binary, "update-ref", "refs/heads/under", r.Commit)
	if res.code != 0 {
		t.Fatalf("refretry with the shim on PATH: %+v", res)
	}
	if n := strings.Count(res.stderr, `"msg":"summary"`); n != 1 {
		t.Errorf("%d operations logged, want 1 (refretry ran itself as git?):\n%s", n, res.stderr)
	}
	res = runCmd(t, r.Dir, env, "create refs/heads/under2 "+r.Commit+"\n", binary, "--stdin")
	if res.code != 0 || strings.Count(res.stderr, `"msg":"summary"`) != 1 {
		t.Errorf("refretry --stdin with the shim on PATH: %+v", res)
	}
}

// TestShimNoLoop puts two distinct shims (copies of refretry) on PATH, one of them
// twice and once through a symbolic link to its directory: every call still reaches
// the real git.
func TestShimNoLoop(t *testing.T) {
	t.Parallel()
	r := testutil.NewRepo(t, testutil.NewGit(t), "files")
	root := t.TempDir()
	var dirs []string
	for _, name := range []string{"a", "b"} {
		dir := filepath.Join(root, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		src, err := os.Open(binary)
		if err != nil {
			t.Fatal(err)
		}
		dst, err := os.OpenFile(filepath.Join(dir, "git"), os.O_CREATE|os.O_WRONLY, 0o755)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(dst, src); err != nil {
			t.Fatal(err)
		}
		src.Close()
		if err := dst.Close(); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, dir)
	}
	linked := filepath.Join(root, "linked")
	if err := os.Symlink(dirs[0], linked); err != nil {
		t.Fatal(err)
	}
	env := slices.DeleteFunc(slices.Clone(r.Env), func(kv string) bool { return strings.HasPrefix(kv, "PATH=") })
	env = append(env, "PATH="+strings.Join([]string{dirs[0], linked, dirs[1], dirs[0], filepath.Dir(r.Git.Path), os.Getenv("PATH")}, ":"))
	shimGit := filepath.Join(dirs[0], "git")
	if res := runCmd(t, r.Dir, env, "", shimGit, "rev-parse", "HEAD"); res.code != 0 || strings.TrimSpace(res.stdout) != r.Commit {
		t.Errorf("rev-parse through two shims: %+v", res)
	}
	if res := runCmd(t, r.Dir, env, "", shimGit, "update-ref", "refs/heads/through-two", r.Commit); res.code != 0 {
		t.Errorf("update-ref through two shims: %+v", res)
	}
	// REFRETRY_GIT naming the other shim leads on to the real git too.
	env2 := append(slices.Clone(env), "REFRETRY_GIT="+filepath.Join(dirs[1], "git"))
	if res := runCmd(t, r.Dir, env2, "", shimGit, "update-ref", "refs/heads/through-env", r.Commit); res.code != 0 {
		t.Errorf("update-ref with REFRETRY_GIT naming another shim: %+v", res)
	}
	// Only shims on PATH: a clear failure, not a loop.
	env3 := slices.DeleteFunc(slices.Clone(env), func(kv string) bool { return strings.HasPrefix(kv, "PATH=") })
	env3 = append(env3, "PATH="+strings.Join([]string{dirs[0], linked}, ":"))
	if res := runCmd(t, r.Dir, env3, "", shimGit, "status"); res.code != 127 || !strings.Contains(res.stderr, "no git found") {
		t.Errorf("with no real git: %+v", res)
	}
}
