// Package testutil makes real git repositories for tests and finds the git binaries
// they run against.
package testutil

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/refretry/refretry/internal/gitexec"
	"github.com/refretry/refretry/internal/platform"
)

// Git is a git binary under test.
type Git struct {
	Path     string
	Version  string // "2.39.5"
	Reftable bool   // supports --ref-format=reftable
}

// Name is a short label for subtests.
func (g Git) Name() string { return "git" + g.Version }

// AtLeast reports whether this git is version major.minor or later.
func (g Git) AtLeast(major, minor int) bool { return gitexec.AtLeast(g.Version, major, minor) }

// NewGit returns git 2.55, from REFRETRY_TEST_GIT or the cache scripts/get-git.sh fills.
// Where neither is there (a fresh clone: REFRETRY_TEST_GIT unset, nothing in the
// cache) the test is skipped, and the first such skip in the process prints one line
// saying how to get it; CI sets REFRETRY_TEST_GIT (scripts/test.sh), so it runs them
// all. A git that is there but unusable, or has no reftable, fails the test: the
// reftable tests are the point.
func NewGit(t testing.TB) Git {
	t.Helper()
	path, ok := newGitPath()
	if !ok {
		missingOnce.Do(func() {
			fmt.Fprintf(os.Stderr, "refretry tests: no git 2.55 at %s: skipping the tests that need it; run scripts/get-git.sh (or set REFRETRY_TEST_GIT)\n", path)
		})
		t.SkipNow()
	}
	g := probe(t, path)
	if !g.Reftable {
		t.Fatalf("git at %s (%s) has no reftable support: run scripts/get-git.sh, or set REFRETRY_TEST_GIT", path, g.Version)
	}
	return g
}

// missingOnce prints the line about a missing git 2.55 once per test process.
var missingOnce sync.Once

// newGitPath is where NewGit looks for git 2.55: REFRETRY_TEST_GIT, else the cache of
// scripts/get-git.sh. ok is false when REFRETRY_TEST_GIT is unset and the cache holds
// no git.
func newGitPath() (path string, ok bool) {
	if path := os.Getenv("REFRETRY_TEST_GIT"); path != "" {
		return path, true
	}
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache")
	}
	path = filepath.Join(cache, "refretry", "git-2.55.0", "bin", "git")
	_, err := os.Stat(path)
	return path, !errors.Is(err, fs.ErrNotExist)
}

// MainExamplesNeedGit is a TestMain for a package whose Examples run ExampleGit: where
// git 2.55 is not to be found they are left out (an Example cannot skip), with the
// one line NewGit prints, unless the command line chose what to run (-run).
func MainExamplesNeedGit(m *testing.M) {
	if !flag.Parsed() {
		flag.Parse()
	}
	if _, ok := newGitPath(); !ok && flag.Lookup("test.run").Value.String() == "" {
		missingOnce.Do(func() {
			fmt.Fprintln(os.Stderr, "refretry tests: no git 2.55: skipping the tests and examples that need it; run scripts/get-git.sh (or set REFRETRY_TEST_GIT)")
		})
		flag.Set("test.run", "^(Test|Fuzz)")
	}
	os.Exit(m.Run())
}

// ExampleGit is the git an Example runs where the system git is too old (gather needs
// 2.40; these machines have 2.39): git 2.55 where NewGit finds it, else "git" from
// PATH. An Example cannot skip, so where neither will do it fails, with the message
// of the code it documents.
func ExampleGit() string {
	if path, ok := newGitPath(); ok {
		return path
	}
	return "git"
}

// SystemGit returns the system git (2.39 on these machines), which lacks reftable.
func SystemGit(t testing.TB) Git {
	t.Helper()
	path := os.Getenv("REFRETRY_TEST_OLD_GIT")
	if path == "" {
		path = "/usr/bin/git"
	}
	return probe(t, path)
}

// Gits returns both git binaries under test.
func Gits(t testing.TB) []Git { return []Git{SystemGit(t), NewGit(t)} }

// probe learns a git's version and whether it has reftable, once per path and test
// binary: every test asks for its gits, and the two processes were a few hundred
// per package.
func probe(t testing.TB, path string) Git {
	t.Helper()
	if g, ok := probed.Load(path); ok {
		return g.(Git)
	}
	out, err := exec.Command(path, "version").Output()
	if err != nil {
		t.Fatalf("git %s: %v", path, err)
	}
	v := strings.TrimPrefix(strings.TrimSpace(string(out)), "git version ")
	g := Git{Path: path, Version: v}
	dir := t.TempDir()
	g.Reftable = exec.Command(path, "init", "-q", "--ref-format=reftable", dir).Run() == nil
	probed.Store(path, g)
	return g
}

var probed sync.Map // path -> Git

// Repo is a temporary repository with one commit on main.
type Repo struct {
	t       testing.TB
	Git     Git
	Dir     string // the work tree
	GitDir  string // .git
	Env     []string
	Backend string
	Commit  string // the first commit's oid
	// Store is where the refs live: "" for the git directory, else a directory
	// outside the repository (NewRepoOutside).
	Store string
}

// NewRepo makes a repository with the given backend ("files" or "reftable").
func NewRepo(t testing.TB, g Git, backend string) *Repo {
	t.Helper()
	return newRepo(t, g, backend, false)
}

// NewRepoOutside makes a repository whose refs live outside it, in Store (a
// directory beside the work tree): initialised with GIT_REFERENCE_BACKEND=
// <backend>://<Store>, which git init writes into extensions.refStorage (git 2.54+;
// the test is skipped on an older git). The repository's Env does not name the
// store: every later git finds it in the repository's config.
func NewRepoOutside(t testing.TB, g Git, backend string) *Repo {
	t.Helper()
	if !g.AtLeast(2, 54) {
		t.Skipf("git %s: refs outside the repository (extensions.refStorage = <format>://<path>) need git 2.54+", g.Version)
	}
	return newRepo(t, g, backend, true)
}

func newRepo(t testing.TB, g Git, backend string, outside bool) *Repo {
	t.Helper()
	root := t.TempDir()
	r := &Repo{t: t, Git: g, Dir: filepath.Join(root, "repo"), Env: NoMaintenanceEnv(t, root), Backend: backend}
	r.GitDir = filepath.Join(r.Dir, ".git")
	args := []string{"init", "-q", "-b", "main"}
	if backend == "reftable" {
		args = append(args, "--ref-format=reftable")
	}
	env := r.Env
	if outside {
		real, err := filepath.EvalSymlinks(root) // git names the store by its real path
		if err != nil {
			t.Fatal(err)
		}
		r.Store = filepath.Join(real, "refstore")
		if err := os.Mkdir(r.Store, 0o755); err != nil { // git init wants it there
			t.Fatal(err)
		}
		env = append(slices.Clip(r.Env), "GIT_REFERENCE_BACKEND="+backend+"://"+r.Store)
	}
	cmd := exec.Command(g.Path, append(args, r.Dir)...)
	cmd.Dir, cmd.Env = root, env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	r.Run("commit", "-q", "--allow-empty", "-m", "first")
	r.Commit = r.Run("rev-parse", "HEAD")
	return r
}

func (r *Repo) run(dir string, args ...string) string {
	r.t.Helper()
	cmd := exec.Command(r.Git.Path, args...)
	cmd.Dir, cmd.Env = dir, r.Env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		r.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

// Run runs git in the repository and returns its trimmed stdout; failure fails the test.
func (r *Repo) Run(args ...string) string { r.t.Helper(); return r.run(r.Dir, args...) }

// NewCommit makes another commit and returns its oid.
func (r *Repo) NewCommit(msg string) string {
	r.t.Helper()
	r.Run("commit", "-q", "--allow-empty", "-m", msg)
	return r.Run("rev-parse", "HEAD")
}

// Refs returns every ref under prefix with its value. It starts a git only when the
// ref store has changed since the last call (RefsRead).
func (r *Repo) Refs(prefix string) map[string]string {
	r.t.Helper()
	refs := map[string]string{}
	out := RefsRead("Refs "+prefix, r.GitDir, r.Store, func() string {
		return r.Run("for-each-ref", "--format=%(refname) %(objectname)", prefix)
	})
	for _, line := range strings.Split(out, "\n") {
		if name, oid, ok := strings.Cut(line, " "); ok {
			refs[name] = oid
		}
	}
	return refs
}

// LockPath is the lock file a writer of ref must take: tables.list.lock for reftable,
// <ref>.lock for files, in the git directory or the Store.
func (r *Repo) LockPath(ref string) string {
	dir := r.GitDir
	if r.Store != "" {
		dir = r.Store
	}
	if r.Backend == "reftable" {
		return filepath.Join(dir, "reftable", "tables.list.lock")
	}
	return filepath.Join(dir, filepath.FromSlash(ref)+".lock")
}

// Hold creates a lock file by hand, as a stuck or dead writer would leave it, and
// returns a function that removes it.
func (r *Repo) Hold(path string) (release func()) {
	r.t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		r.t.Fatal(err)
	}
	return func() { os.Remove(path) }
}

// Clone copies the repository's directory tree, so that a command can be run on two
// identical repositories and the results compared.
func (r *Repo) Clone() *Repo {
	r.t.Helper()
	c := *r
	root := r.t.TempDir()
	c.Dir = filepath.Join(root, "repo")
	c.GitDir = filepath.Join(c.Dir, ".git")
	if out, err := exec.Command("cp", "-a", r.Dir, c.Dir).CombinedOutput(); err != nil {
		r.t.Fatalf("cp: %v\n%s", err, out)
	}
	return &c
}

// Queued counts the connections waiting to be accepted at an abstract Unix socket
// (a group commit's rendezvous point): /proc/net/unix lists each under the
// listener's name, in state 02 (connecting). -1 when it cannot be read.
func Queued(name string) int {
	b, err := os.ReadFile("/proc/net/unix")
	if err != nil {
		return -1
	}
	count := 0
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		if len(f) == 8 && f[7] == "@"+name && f[5] == "02" {
			count++
		}
	}
	return count
}

// ListenReleased binds a rendezvous name that the test has just released. A
// process that a parallel test forks holds a copy of every descriptor, close-on-exec
// ones included, until it execs, and the name stays bound until then; so a busy name
// is tried again for a while before its error is returned.
func ListenReleased(name string) (*platform.Listener, error) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		l, err := platform.Listen(name)
		if !errors.Is(err, platform.ErrBusy) || time.Now().After(deadline) {
			return l, err
		}
		time.Sleep(time.Millisecond)
	}
}

// WaitQueued waits until n connections wait at the named abstract socket.
func WaitQueued(t testing.TB, name string, n int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		q := Queued(name)
		switch {
		case q < 0:
			t.Skip("cannot count queued connections: no /proc/net/unix")
		case q >= n:
			return
		case time.Now().After(deadline):
			t.Fatalf("only %d of %d invocations queued", q, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// AgedLock makes dir/x.lock, last modified age ago, and, when pid > 0, dir/x~pid.lock
// naming pid, as a writer that took the lock with core.lockfilePid leaves them.
func AgedLock(t testing.TB, dir string, age time.Duration, pid int) (lock, pidFile string) {
	t.Helper()
	lock, pidFile = filepath.Join(dir, "x.lock"), filepath.Join(dir, "x~pid.lock")
	if err := os.WriteFile(lock, []byte("held"), 0o644); err != nil {
		t.Fatal(err)
	}
	if pid > 0 {
		if err := os.WriteFile(pidFile, []byte(fmt.Sprintf("pid %d\n", pid)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	then := time.Now().Add(-age)
	for _, p := range []string{lock, pidFile} {
		os.Chtimes(p, then, then)
	}
	return lock, pidFile
}

// Exists reports whether a file (or a symbolic link) is at p.
func Exists(p string) bool { _, err := os.Lstat(p); return err == nil }
