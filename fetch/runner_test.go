package fetch_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/refretry/refretry/failure"
	"github.com/refretry/refretry/internal/harness/fakegit/fakegittest"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/refretry/refretry/fetch"
	"github.com/refretry/refretry/internal/harness/gitserver"
	"github.com/refretry/refretry/internal/harness/testutil"
	"github.com/refretry/refretry/retry"
	"github.com/refretry/refretry/settings"
)

// combos are the gits and backends every fetch test runs on.
func combos(t *testing.T) []combo {
	cur, old := testutil.NewGit(t), testutil.SystemGit(t)
	return []combo{{cur, "files"}, {cur, "reftable"}, {old, "files"}}
}

// coveringCombos is combos at the stress size; at the default size the two that hold
// each git and each backend once: 2.55 on reftable and 2.39 on files.
func coveringCombos(t *testing.T) []combo { return testutil.Cells(t, combos(t), 1, 2) }

type combo struct {
	git     testutil.Git
	backend string
}

func (c combo) name() string { return c.git.Name() + "/" + c.backend }

// world is a bare remote with main and b1..b20, a clone of it, and the remote's
// branches then moved to a new commit: every fetch has 20 remote-tracking refs to
// update.
type world struct {
	t      testing.TB
	c      combo
	root   string
	remote string // the bare repository
	clone  string // the clone's work tree
	env    []string
	stdin  io.Reader // what run gives git fetch's standard input
}

const branches = 20

// newWorld is a copy of the combo's world, built once per test binary (buildWorld):
// the hermetic date makes its commits the same wherever it is built, and the clone's
// origin, the one path the tree names, is pointed at the copy's remote.
func newWorld(t testing.TB, c combo) *world {
	t.Helper()
	root, builtIn, _ := worlds.Copy(t, c.name(), func(t testing.TB, dir string) struct{} { buildWorld(t, c, dir); return struct{}{} })
	w := worldAt(t, c, root)
	testutil.Relocate(t, filepath.Join(w.clone, ".git", "config"), builtIn, root)
	return w
}

// worlds holds each combo's world as newWorld hands it out.
var worlds testutil.Starts[struct{}]

func worldAt(t testing.TB, c combo, root string) *world {
	return &world{t: t, c: c, root: root, remote: filepath.Join(root, "remote.git"), clone: filepath.Join(root, "clone"),
		env: testutil.NoMaintenanceEnv(t, root)}
}

// buildWorld makes the world under root.
func buildWorld(t testing.TB, c combo, root string) {
	t.Helper()
	w := worldAt(t, c, root)
	format := []string{}
	if c.backend == "reftable" {
		format = []string{"--ref-format=reftable"}
	}
	w.git(root, append([]string{"init", "-q", "--bare", "-b", "main"}, append(format, w.remote)...)...)
	a := w.commit("A", "")
	w.setBranches(a)
	w.git(root, append([]string{"clone", "-q"}, append(format, "file://"+w.remote, w.clone)...)...)
	w.move()
}

// commit makes a commit in the remote with an empty tree.
func (w *world) commit(msg, parent string) string {
	w.t.Helper()
	tree := w.git(w.remote, "mktree")
	args := []string{"commit-tree", "-m", msg, tree}
	if parent != "" {
		args = append(args, "-p", parent)
	}
	return w.git(w.remote, args...)
}

// move moves every remote branch to a new commit on top of main, returning it.
func (w *world) move() string {
	w.t.Helper()
	b := w.commit("moved", w.git(w.remote, "rev-parse", "main"))
	w.setBranches(b)
	return b
}

// setBranches points the remote's main and b1..b20 at oid, in one update-ref.
func (w *world) setBranches(oid string) {
	w.t.Helper()
	var in strings.Builder
	fmt.Fprintf(&in, "update refs/heads/main %s\n", oid)
	for i := 1; i <= branches; i++ {
		fmt.Fprintf(&in, "update refs/heads/b%d %s\n", i, oid)
	}
	cmd := exec.Command(w.c.git.Path, "update-ref", "--stdin")
	cmd.Dir, cmd.Env, cmd.Stdin = w.remote, w.env, strings.NewReader(in.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		w.t.Fatalf("git update-ref --stdin: %v\n%s", err, out)
	}
}

func (w *world) git(dir string, args ...string) string {
	w.t.Helper()
	cmd := exec.Command(w.c.git.Path, args...)
	cmd.Dir, cmd.Env = dir, w.env
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	out, err := cmd.Output()
	if err != nil {
		w.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, errOut.String())
	}
	return strings.TrimSpace(string(out))
}

// behind counts the clone's remote-tracking refs that differ from the remote's
// branches; either side missing one of them fails the test.
func (w *world) behind() int {
	w.t.Helper()
	tracking, heads := w.refs(w.clone, "refs/remotes/origin/"), w.refs(w.remote, "refs/heads/")
	n := 0
	for i := 0; i <= branches; i++ {
		name := "main"
		if i > 0 {
			name = fmt.Sprintf("b%d", i)
		}
		have, ok1 := tracking[name]
		want, ok2 := heads[name]
		if !ok1 || !ok2 {
			w.t.Fatalf("refs/remotes/origin/%s in the clone: %v; refs/heads/%s in the remote: %v", name, ok1, name, ok2)
		}
		if have != want {
			n++
		}
	}
	return n
}

// refs is every ref under prefix in the repository at dir, by its name after prefix,
// with its value.
func (w *world) refs(dir, prefix string) map[string]string {
	w.t.Helper()
	refs := map[string]string{}
	for _, line := range strings.Split(w.git(dir, "for-each-ref", "--format=%(refname) %(objectname)", prefix), "\n") {
		if name, oid, ok := strings.Cut(line, " "); ok {
			refs[strings.TrimPrefix(name, prefix)] = oid
		}
	}
	return refs
}

// lockPath is the lock a fetch of ref must take in the clone.
func (w *world) lockPath(ref string) string {
	if w.c.backend == "reftable" {
		return filepath.Join(w.clone, ".git", "reftable", "tables.list.lock")
	}
	return filepath.Join(w.clone, ".git", filepath.FromSlash(ref)+".lock")
}

func hold(t testing.TB, path string) func() {
	t.Helper()
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	return func() { once.Do(func() { os.Remove(path) }) }
}

// noLockWait turns git's own wait for a held lock off (testutil.NoLockWaitEnv), so that
// a lock held on purpose fails the attempt at once: what the tests check is what
// refretry does next, not git's wait.
func noLockWait(r *fetch.Runner) {
	r.Env = append(slices.Clone(r.Env), testutil.NoLockWaitEnv)
}

// result is one Run.
type result struct {
	code           int
	err            error
	stdout, stderr string
	attempts       []retry.Attempt
}

func (r result) classes() []failure.Class { return fakegittest.ClassesOf(r.attempts) }

func policy(attempts int) func() (settings.Settings, error) { return policyBreaking(attempts, false) }

// policyBreaking is policy, removing a stale lock when breakStale is true.
func policyBreaking(attempts int, breakStale bool) func() (settings.Settings, error) {
	return func() (settings.Settings, error) {
		return settings.Settings{Policy: retry.Policy{
			InitialDelay: time.Millisecond, MaxDelay: 10 * time.Millisecond, Multiplier: 2,
			MaxAttempts: attempts, Timeout: time.Minute,
		}, StaleAfter: settings.DefaultStaleAfter, BreakStaleLocks: breakStale}, nil
	}
}

// run runs refretry's fetch in the clone, with configure's changes to the Runner.
func (w *world) run(configure func(*fetch.Runner), args ...string) result {
	w.t.Helper()
	var out, errOut bytes.Buffer
	var mu sync.Mutex
	var attempts []retry.Attempt
	r := &fetch.Runner{
		Config: settings.Config{
			Git:       w.c.git.Path,
			Dirs:      []string{w.clone},
			Env:       w.env,
			Settings:  policy(20),
			OnAttempt: func(a retry.Attempt) { mu.Lock(); attempts = append(attempts, a); mu.Unlock() },
			Note:      func(_, msg string) { mu.Lock(); fmt.Fprintf(&errOut, "refretry: %s\n", msg); mu.Unlock() },
		},
	}
	if configure != nil {
		configure(r)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := r.Run(ctx, args, w.stdin, &out, &errOut)
	return result{res.ExitCode, err, out.String(), errOut.String(), attempts}
}

// plain runs git fetch itself in dir.
func (w *world) plain(dir string, args ...string) result {
	w.t.Helper()
	cmd := exec.Command(w.c.git.Path, append([]string{"fetch"}, args...)...)
	cmd.Dir, cmd.Env = dir, append(slices.Clone(w.env), "LC_ALL=C")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		w.t.Fatal(err)
	}
	return result{code: code, stdout: out.String(), stderr: errOut.String()}
}

// TestConcurrentFetches: 16 fetches at once into one clone (8 by default), whose 20
// remote-tracking refs all need moving, all succeed and leave every ref at the
// remote's value, and some of them retried. Plain git fails most of them (lost races
// and held locks); the test checks refretry only. By default it runs on two of the
// three combos (coveringCombos).
func TestConcurrentFetches(t *testing.T) {
	t.Parallel()
	for _, c := range coveringCombos(t) {
		t.Run(c.name(), func(t *testing.T) {
			t.Parallel()
			n := testutil.Scale(t, 8, 16)
			// A round whose fetches all went through at the first attempt checked
			// nothing of refretry's: run another, a few at most, until one met another's lock.
			const rounds = 5
			for round := 1; ; round++ {
				if retried := concurrentFetches(t, newWorld(t, c), n); retried > 0 {
					t.Logf("round %d: %d of %d fetches retried", round, retried, n)
					break
				}
				if round == rounds {
					t.Fatalf("in %d rounds of %d fetches at once, none retried", rounds, n)
				}
			}
		})
	}
}

// concurrentFetches runs n fetches at once in w, checks that each succeeded and left
// every ref at the remote's value, and returns how many of them retried.
func concurrentFetches(t *testing.T, w *world, n int) (retried int) {
	t.Helper()
	results := make([]result, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() { defer wg.Done(); results[i] = w.run(nil, "origin") }()
	}
	wg.Wait()
	for i, r := range results {
		if r.code != 0 {
			t.Errorf("fetch %d: exit %d, attempts %v\n%s", i, r.code, r.classes(), r.stderr)
		}
		for _, cl := range r.classes()[:len(r.attempts)-1] {
			if !cl.Retryable() {
				t.Errorf("fetch %d retried a %s failure", i, cl)
			}
		}
		if len(r.attempts) > 1 {
			retried++
		}
	}
	if b := w.behind(); b != 0 {
		t.Errorf("%d remote-tracking refs differ from the remote", b)
	}
	return retried
}

// TestRefDeletedDuringFetch: four other processes delete 100 loose refs of the clone
// (40 by default), one at a time each, while refretry fetches new objects into it. On the files backend git 2.55's
// connectivity check dies on a ref deleted while it lists the refs ("fatal: bad
// object <ref>"; plain git fails about one such fetch in five): refretry fetches
// again, and every round ends with the fetch done. Whether a round meets the race is
// up to timing: by default two rounds check the outcome under the churn (and
// TestClassifyFixtures replays the race's captured output,
// testdata/fetch/2.55-files-lost-race-ref-deleted.txtar); at stress size ten
// rounds run, and on git 2.55's files backend more, up to 100, until one has met the
// race, which the test then requires (testutil.Hunt).
func TestRefDeletedDuringFetch(t *testing.T) {
	t.Parallel()
	for _, c := range combos(t) {
		t.Run(c.name(), func(t *testing.T) {
			t.Parallel()
			w := newWorld(t, c) // its home starts no auto-maintenance, which would race the next round's set-up
			head := w.git(w.clone, "rev-parse", "HEAD")
			doomed := testutil.Scale(t, 40, 100)
			possible := c.git.AtLeast(2, 55) && c.backend == "files"
			testutil.Hunt(t, 2, 10, 100, possible, func(round int) (met bool) {
				if round > 0 {
					w.move()
				}
				var create strings.Builder
				for i := range doomed {
					fmt.Fprintf(&create, "update refs/doomed/%d %s\n", i, head) // deletes that lost reftable's lock leave refs
				}
				cmd := exec.Command(c.git.Path, "update-ref", "--stdin")
				cmd.Dir, cmd.Env, cmd.Stdin = w.clone, w.env, strings.NewReader(create.String())
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("creating the doomed refs: %v\n%s", err, out)
				}
				var deleters sync.WaitGroup
				for d := range 4 {
					deleters.Add(1)
					go func() {
						defer deleters.Done()
						for i := d; i < doomed; i += 4 {
							del := exec.Command(c.git.Path, "update-ref", "-d", fmt.Sprintf("refs/doomed/%d", i))
							del.Dir, del.Env = w.clone, w.env
							_ = del.Run()
						}
					}()
				}
				r := w.run(nil, "origin")
				deleters.Wait()
				if r.code != 0 || r.err != nil {
					t.Fatalf("round %d: exit %d, err %v, attempts %v\n%s", round, r.code, r.err, r.classes(), r.stderr)
				}
				if b := w.behind(); b != 0 {
					t.Fatalf("round %d: %d remote-tracking refs differ from the remote", round, b)
				}
				return slices.Contains(r.classes(), failure.LostRace)
			})
		})
	}
}

// TestHeldLockReleased: a lock held by someone else fails the first attempt; once it
// is released, the retry fetches everything. The caller sees the final attempt's
// output only.
func TestHeldLockReleased(t *testing.T) {
	t.Parallel()
	for _, c := range combos(t) {
		t.Run(c.name(), func(t *testing.T) {
			t.Parallel()
			w := newWorld(t, c)
			lock := w.lockPath("refs/remotes/origin/b3")
			release := hold(t, lock)
			defer release()
			r := w.run(func(r *fetch.Runner) {
				noLockWait(r)
				record := r.OnAttempt
				r.OnAttempt = func(a retry.Attempt) { record(a); release() }
			}, "origin")
			if r.code != 0 || !slices.Equal(r.classes(), []failure.Class{failure.LockContention, "ok"}) {
				t.Fatalf("exit %d, attempts %v\n%s", r.code, r.classes(), r.stderr)
			}
			if strings.Contains(r.stderr, "cannot lock") || !strings.Contains(r.stderr, "-> origin/b3") {
				t.Errorf("stderr is not the final attempt's alone:\n%s", r.stderr)
			}
			if b := w.behind(); b != 0 {
				t.Errorf("%d remote-tracking refs differ from the remote", b)
			}
		})
	}
}

// TestFinalFailuresAsGit: failures another attempt cannot fix end after one attempt,
// with git's own stdout, stderr and exit code, as plain git fetch leaves them in an
// identical clone. By default each case runs once, case i on combo i mod 3, so each
// combo meets some of them.
func TestFinalFailuresAsGit(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		class failure.Class
		setup func(w *world) []string // returns git fetch's arguments
	}{
		{"missing ref", failure.NotFound, func(w *world) []string { return []string{"origin", "refs/heads/nope"} }},
		{"missing repository", failure.NotFound, func(w *world) []string { return []string{filepath.Join(w.root, "nope.git")} }},
		{"missing remote", failure.NotFound, func(w *world) []string { return []string{"nosuchremote"} }},
		{"usage", failure.Usage, func(w *world) []string { return []string{"--no-such-option"} }},
		{"non-fast-forward", failure.Rejected, func(w *world) []string {
			w.git(w.clone, "update-ref", "refs/heads/loc", "refs/remotes/origin/main")
			w.git(w.remote, "update-ref", "refs/heads/b5", w.commit("unrelated", ""))
			return []string{"origin", "refs/heads/b5:refs/heads/loc"}
		}},
		{"would clobber tag", failure.Rejected, func(w *world) []string {
			w.git(w.remote, "tag", "t1", "main~1")
			w.git(w.clone, "fetch", "-q", "origin", "refs/tags/*:refs/tags/*")
			w.git(w.remote, "tag", "-f", "t1", "main")
			return []string{"origin", "refs/tags/*:refs/tags/*"}
		}},
		{"checked-out branch", failure.Rejected, func(w *world) []string { return []string{"origin", "refs/heads/b5:refs/heads/main"} }},
		{"hook", failure.Declined, func(w *world) []string {
			hook := filepath.Join(w.clone, ".git", "hooks", "reference-transaction")
			if err := os.MkdirAll(filepath.Dir(hook), 0o755); err != nil {
				w.t.Fatal(err)
			}
			if err := os.WriteFile(hook, []byte("#!/bin/sh\n[ \"$1\" = prepared ] && exit 1\nexit 0\n"), 0o755); err != nil {
				w.t.Fatal(err)
			}
			return []string{"origin"}
		}},
	}
	type cell struct {
		c  combo
		tc int
	}
	cbs := combos(t)
	var all []cell
	for _, c := range cbs {
		for i := range cases {
			all = append(all, cell{c, i})
		}
	}
	var small []int
	for i := range cases {
		small = append(small, i%len(cbs)*len(cases)+i)
	}
	for _, cl := range testutil.Cells(t, all, small...) {
		c, tc := cl.c, cases[cl.tc]
		t.Run(c.name()+"/"+tc.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t, c)
			args := tc.setup(w)
			// The same start for plain git: a copy of the whole world.
			twin := filepath.Join(t.TempDir(), "world")
			if out, err := exec.Command("cp", "-a", w.root, twin).CombinedOutput(); err != nil {
				t.Fatalf("cp: %v\n%s", err, out)
			}
			r := w.run(nil, args...)
			want := w.plain(filepath.Join(twin, "clone"), replaceRoot(args, w.root, twin)...)
			want.stderr = strings.ReplaceAll(want.stderr, twin, w.root)
			if r.code != want.code || r.stdout != want.stdout || r.stderr != want.stderr {
				t.Errorf("refretry fetch: exit %d\n%s\nplain git fetch: exit %d\n%s", r.code, r.stderr, want.code, want.stderr)
			}
			if got := r.classes(); !slices.Equal(got, []failure.Class{tc.class}) {
				t.Errorf("attempts %v, want one %s", got, tc.class)
			}
		})
	}
}

func replaceRoot(args []string, from, to string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = strings.ReplaceAll(a, from, to)
	}
	return out
}

// TestStaleLock: a lock whose ~pid.lock names a process that is gone, old enough to be
// past any doubt, stops the fetch at once with the advice to remove it; with
// Settings.BreakStaleLocks refretry removes it and the fetch lands.
func TestStaleLock(t *testing.T) {
	t.Parallel()
	c := combo{testutil.NewGit(t), "files"}
	for _, breakIt := range []bool{false, true} {
		t.Run(fmt.Sprint("break=", breakIt), func(t *testing.T) {
			t.Parallel()
			w := newWorld(t, c)
			lock := w.lockPath("refs/remotes/origin/b3")
			hold(t, lock)
			pidFile := strings.TrimSuffix(lock, ".lock") + "~pid.lock"
			if err := os.WriteFile(pidFile, []byte("pid 4194304\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			old := time.Now().Add(-time.Hour)
			for _, p := range []string{lock, pidFile} {
				os.Chtimes(p, old, old)
			}
			r := w.run(func(r *fetch.Runner) { noLockWait(r); r.Settings = policyBreaking(20, breakIt) }, "origin")
			if !breakIt {
				var e *failure.Error
				if r.code != 1 || !errors.As(r.err, &e) || e.Class != failure.StaleLock || len(r.attempts) != 1 {
					t.Fatalf("exit %d, err %v, attempts %v", r.code, r.err, r.classes())
				}
				if adv := e.Advice; !strings.Contains(adv, "rm -f '"+lock+"'") {
					t.Errorf("advice %q does not say how to remove the lock", adv)
				}
				if _, err := os.Stat(lock); err != nil {
					t.Errorf("the lock was touched: %v", err)
				}
				return
			}
			if r.code != 0 || !strings.Contains(r.stderr, "refretry: removed stale lock '"+lock+"'") {
				t.Fatalf("exit %d, attempts %v\n%s", r.code, r.classes(), r.stderr)
			}
			if b := w.behind(); b != 0 {
				t.Errorf("%d remote-tracking refs differ from the remote", b)
			}
		})
	}
}

// TestStaleLockOutsideStore: in a clone whose refs live outside it (git 2.54+,
// cloned with GIT_REFERENCE_BACKEND), reftable's stale tables.list.lock, which git's
// message does not name, is found in that store: the fetch stops at once with the
// advice naming the lock at its true path, nothing fetched.
func TestStaleLockOutsideStore(t *testing.T) {
	t.Parallel()
	w := newWorld(t, combo{testutil.NewGit(t), "reftable"})
	root, err := filepath.EvalSymlinks(w.root) // git names the store by its real path
	if err != nil {
		t.Fatal(err)
	}
	store, clone := filepath.Join(root, "store"), filepath.Join(root, "clone-outside")
	if err := os.Mkdir(store, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(w.c.git.Path, "clone", "-q", "file://"+w.remote, clone)
	cmd.Dir, cmd.Env = root, append(append([]string{}, w.env...), "GIT_REFERENCE_BACKEND=reftable://"+store)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git clone: %v\n%s", err, out)
	}
	w.clone = clone
	w.move()
	lock := filepath.Join(store, "reftable", "tables.list.lock")
	hold(t, lock)
	old := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(lock, old, old); err != nil {
		t.Fatal(err)
	}
	r := w.run(func(r *fetch.Runner) { noLockWait(r); r.Settings = policy(20) }, "origin")
	var e *failure.Error
	if r.code == 0 || !errors.As(r.err, &e) || e.Class != failure.StaleLock || len(r.attempts) != 1 {
		t.Fatalf("exit %d, err %v, attempts %v", r.code, r.err, r.classes())
	}
	if e.Lock == nil || e.Lock.Path != lock || !strings.Contains(e.Advice, "rm -f '"+lock+"'") {
		t.Errorf("lock %+v, advice %q: want %s", e.Lock, e.Advice, lock)
	}
	if b := w.behind(); b != branches+1 {
		t.Errorf("%d remote-tracking refs differ from the remote, want all %d", b, branches+1)
	}
}

// TestUnseenHolder (#15): a new lock whose ~pid.lock names a pid no process here has
// (as a live holder in another container would look) is waited for, even with
// Settings.BreakStaleLocks: the fetch retries and lands once the lock goes. If the budget ends
// first, the advice says why the lock was still waited for.
func TestUnseenHolder(t *testing.T) {
	t.Parallel()
	c := combo{testutil.NewGit(t), "files"}
	for _, lands := range []bool{true, false} {
		t.Run(fmt.Sprint("lands=", lands), func(t *testing.T) {
			t.Parallel()
			w := newWorld(t, c)
			lock := w.lockPath("refs/remotes/origin/b3")
			release := hold(t, lock)
			defer release()
			pidFile := strings.TrimSuffix(lock, ".lock") + "~pid.lock"
			if err := os.WriteFile(pidFile, []byte("pid 4194304\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			r := w.run(func(r *fetch.Runner) {
				noLockWait(r)
				r.Settings = policyBreaking(2, true)
				if lands {
					record := r.OnAttempt
					r.OnAttempt = func(a retry.Attempt) { record(a); os.Remove(pidFile); release() }
				}
			}, "origin")
			if strings.Contains(r.stderr, "removed stale lock") {
				t.Fatalf("the lock was removed:\n%s", r.stderr)
			}
			if lands {
				if r.code != 0 || len(r.attempts) != 2 || r.classes()[0] != failure.LockContention {
					t.Fatalf("exit %d, attempts %v\n%s", r.code, r.classes(), r.stderr)
				}
				if b := w.behind(); b != 0 {
					t.Errorf("%d remote-tracking refs differ from the remote", b)
				}
				return
			}
			var e *failure.Error
			if r.code == 0 || !errors.As(r.err, &e) || e.Class != failure.LockContention || e.Lock == nil || !e.Lock.HolderUnseen {
				t.Fatalf("exit %d, err %v, attempts %v", r.code, r.err, r.classes())
			}
			want := "its holder, process 4194304 (from the ~pid.lock file), is not running here, but the lock is younger than the pid grace of 2m0s"
			if adv := e.Advice; !strings.HasPrefix(adv, "lock "+lock+" (age ") || !strings.Contains(adv, want) {
				t.Errorf("advice %q, want it to say %q", adv, want)
			}
			if _, err := os.Stat(lock); err != nil {
				t.Errorf("the lock was touched: %v", err)
			}
		})
	}
}

// TestStdinRefspecs: with --stdin, every attempt reads the caller's refspecs.
func TestStdinRefspecs(t *testing.T) {
	t.Parallel()
	w := newWorld(t, combo{testutil.NewGit(t), "files"})
	lock := w.lockPath("refs/remotes/origin/b3")
	release := hold(t, lock)
	defer release()
	w.stdin = strings.NewReader("refs/heads/b3:refs/remotes/origin/b3\nrefs/heads/b4:refs/remotes/origin/b4\n")
	r := w.run(func(r *fetch.Runner) {
		noLockWait(r)
		record := r.OnAttempt
		r.OnAttempt = func(a retry.Attempt) { record(a); release() }
	}, "--stdin", "origin")
	if r.code != 0 || len(r.attempts) != 2 {
		t.Fatalf("exit %d, attempts %v\n%s", r.code, r.classes(), r.stderr)
	}
	for _, b := range []string{"b3", "b4"} {
		if w.git(w.clone, "rev-parse", "refs/remotes/origin/"+b) != w.git(w.remote, "rev-parse", b) {
			t.Errorf("%s was not fetched on the second attempt", b)
		}
	}
}

// TestHTTP: over smart HTTP (git http-backend), a server error is retried, while an
// authentication failure and a missing repository end the run after one attempt.
func TestHTTP(t *testing.T) {
	t.Parallel()
	g := testutil.NewGit(t)
	cases := []struct {
		name string
		opts gitserver.Options
		repo string
		want []failure.Class
		code int
	}{
		{"500 then served", gitserver.Options{FailStatus: 500, FailFirst: 1}, "remote.git", []failure.Class{failure.Transport, "ok"}, 0},
		{"hang-up then served", gitserver.Options{HangUp: 1}, "remote.git", []failure.Class{failure.Transport, "ok"}, 0},
		{"authentication", gitserver.Options{User: "u", Password: "p"}, "remote.git", []failure.Class{failure.Auth}, 128},
		{"missing repository", gitserver.Options{}, "nope.git", []failure.Class{failure.NotFound}, 128},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t, combo{g, "files"})
			s, err := gitserver.Start(g.Path, w.root, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			url := s.URL(tc.repo)
			r := w.run(func(r *fetch.Runner) {
				r.Env = append(slices.Clone(r.Env), "GIT_TERMINAL_PROMPT=0")
			}, url, "+refs/heads/*:refs/remotes/origin/*")
			if r.code != tc.code || !slices.Equal(r.classes(), tc.want) {
				t.Fatalf("exit %d, attempts %v, want exit %d after %v\n%s", r.code, r.classes(), tc.code, tc.want, r.stderr)
			}
			if tc.code == 0 {
				if b := w.behind(); b != 0 {
					t.Errorf("%d remote-tracking refs differ from the remote", b)
				}
				return
			}
			// A final failure: git's own bytes and exit code.
			w.env = append(w.env, "GIT_TERMINAL_PROMPT=0")
			want := w.plain(w.clone, url, "+refs/heads/*:refs/remotes/origin/*")
			if r.code != want.code || r.stdout != want.stdout || r.stderr != want.stderr {
				t.Errorf("refretry: exit %d\n%s\ngit: exit %d\n%s", r.code, r.stderr, want.code, want.stderr)
			}
		})
	}
}

// TestHTTPRateLimit: a server answering 429 with Retry-After. git 2.55 waits as asked
// within the attempt (refretry turns git's 429 handling on, bounded by its budget), and
// when the server keeps refusing past git's retries, refretry's next attempt starts no
// sooner than the server asked. git 2.39 knows no Retry-After: refretry retries on its
// own schedule.
func TestHTTPRateLimit(t *testing.T) {
	t.Parallel()
	cur, old := testutil.NewGit(t), testutil.SystemGit(t)
	cases := []struct {
		name      string
		g         testutil.Git
		failFirst int
		want      []failure.Class
		minWall   time.Duration // at least what the server asked for, in all
		minDelay  time.Duration // refretry's own wait after the first attempt
	}{
		{"2.55, one 429 with Retry-After 2", cur, 1, []failure.Class{"ok"}, 2 * time.Second, 0},
		// git asks 3 times (http.maxRetries), waiting 1 s twice, then says so.
		{"2.55, three 429s with Retry-After 1", cur, 3, []failure.Class{failure.Transport, "ok"}, 3 * time.Second, time.Second},
		{"2.39, one 429", old, 1, []failure.Class{failure.Transport, "ok"}, 0, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t, combo{tc.g, "files"})
			retryAfter := "2"
			if tc.failFirst > 1 {
				retryAfter = "1"
			}
			s, err := gitserver.Start(tc.g.Path, w.root, gitserver.Options{FailStatus: 429, FailFirst: tc.failFirst, RetryAfter: retryAfter})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			start := time.Now()
			r := w.run(nil, s.URL("remote.git"), "+refs/heads/*:refs/remotes/origin/*")
			wall := time.Since(start)
			if r.code != 0 || !slices.Equal(r.classes(), tc.want) {
				t.Fatalf("exit %d, attempts %v, want %v\n%s", r.code, r.classes(), tc.want, r.stderr)
			}
			if wall < tc.minWall {
				t.Errorf("done in %v: the server asked for %v in all", wall, tc.minWall)
			}
			if len(r.attempts) > 1 && r.attempts[0].Delay < tc.minDelay {
				t.Errorf("waited %v before attempt 2, the server asked for %v", r.attempts[0].Delay, tc.minDelay)
			}
			if b := w.behind(); b != 0 {
				t.Errorf("%d remote-tracking refs differ from the remote", b)
			}
		})
	}
}
