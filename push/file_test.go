package push_test

import (
	"errors"
	"fmt"
	"github.com/refretry/refretry/failure"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/refretry/refretry/internal/harness/testutil"
	"github.com/refretry/refretry/push"
	"github.com/refretry/refretry/retry"
)

// TestLockReleased holds the server's lock for the pushed ref, releases it after the
// second failed attempt, and wants the push to land on the third, atomic or not. Each
// combo atomic and not at stress size; by default the two of combos, one atomic and
// one not (testutil.Cells).
func TestLockReleased(t *testing.T) {
	t.Parallel()
	type cell struct {
		cb       combo
		noAtomic bool
	}
	var cells []cell
	for _, cb := range allCombos(t) {
		for _, noAtomic := range []bool{false, true} {
			cells = append(cells, cell{cb, noAtomic})
		}
	}
	// 2.39 to 2.55 reftable atomic, 2.55 to 2.39 files not.
	for _, cl := range testutil.Cells(t, cells, 4, 7) {
		cb, noAtomic := cl.cb, cl.noAtomic
		t.Run(fmt.Sprintf("%s/no-atomic=%v", cb.name(), noAtomic), func(t *testing.T) {
			t.Parallel()
			s := newServer(t, cb.server, cb.backend)
			c := newClient(t, cb.client, s)
			c.commit("a", "a")
			c.run("push", "-q", "origin", "main")
			head := c.commit("b", "b")
			release := s.hold(s.lockPath("refs/heads/x"))
			defer release()
			r := c.push(smallPolicy(10), func(p *push.Runner) {
				p.NoAtomic = noAtomic
				afterAttempt(p, 2, release)
			}, "--porcelain", "origin", "main", "main:refs/heads/x")
			if r.code != 0 || r.err != nil {
				t.Fatalf("exit %d, err %v\nstdout:\n%s\nstderr:\n%s", r.code, r.err, r.stdout, r.stderr)
			}
			want := []failure.Class{failure.LockContention, failure.LockContention, "ok"}
			if !slices.Equal(r.classes(), want) {
				t.Fatalf("attempts %v, want %v\nstderr:\n%s", r.classes(), want, r.stderr)
			}
			if got := s.ref("refs/heads/x"); got != head {
				t.Errorf("server x = %q, want %s", got, head)
			}
			if got := s.ref("refs/heads/main"); got != head {
				t.Errorf("server main = %q, want %s", got, head)
			}
			if !strings.Contains(r.stdout, "refs/heads/main:refs/heads/x\t") || !strings.HasSuffix(r.stdout, "Done\n") {
				t.Errorf("stdout is not the final attempt's porcelain:\n%s", r.stdout)
			}
		})
	}
}

// TestLockHeld never releases the lock: the push gives up after the attempt cap,
// with the last attempt's output, and the server is unchanged. Over combos.
func TestLockHeld(t *testing.T) {
	t.Parallel()
	for _, cb := range combos(t) {
		t.Run(cb.name(), func(t *testing.T) {
			t.Parallel()
			s := newServer(t, cb.server, cb.backend)
			c := newClient(t, cb.client, s)
			first := c.commit("a", "a")
			c.run("push", "-q", "origin", "main")
			c.commit("b", "b")
			defer s.hold(s.lockPath("refs/heads/x"))()
			r := c.push(smallPolicy(3), nil, "--porcelain", "origin", "main", "main:refs/heads/x")
			var ex *retry.ExhaustedError
			var e *failure.Error
			if !errors.As(r.err, &ex) || ex.Reason != retry.ReasonAttempts || ex.Attempts != 3 ||
				!errors.As(r.err, &e) || e.Class != failure.LockContention {
				t.Fatalf("err = %v, want 3 attempts of lock contention exhausted", r.err)
			}
			if r.code != 1 {
				t.Errorf("exit %d, want git's 1", r.code)
			}
			if !strings.Contains(r.stdout, "[remote rejected] (atomic transaction failed)") || !strings.Contains(r.stderr, "remote: error: ") {
				t.Errorf("output is not git's:\nstdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
			}
			if got := s.ref("refs/heads/main"); got != first {
				t.Errorf("server main moved to %s: the atomic push was partly applied", got)
			}
			if got := s.ref("refs/heads/x"); got != "" {
				t.Errorf("server x = %s, want none", got)
			}
		})
	}
}

// TestConflict: real conflicts are reported after exactly one attempt, with git's
// exit code, and change nothing. Over combos.
func TestConflict(t *testing.T) {
	t.Parallel()
	for _, cb := range combos(t) {
		t.Run(cb.name(), func(t *testing.T) {
			t.Parallel()
			s := newServer(t, cb.server, cb.backend)
			c := newClient(t, cb.client, s)
			base := c.commit("a", "a")
			c.run("tag", "v1")
			c.run("push", "-q", "origin", "main", "v1", "main:side")
			other := cloneOf(t, cb.client, s)
			theirs := other.commit("theirs", "x")
			other.run("push", "-q", "origin", "main")
			c.commit("mine", "y")
			c.run("tag", "-f", "v1")

			cases := []struct {
				name string
				args []string
				want failure.Class
			}{
				{"fetch first", []string{"origin", "main"}, failure.Behind},
				{"tag exists", []string{"origin", "v1"}, failure.Rejected},
			}
			for _, tc := range cases {
				r := c.push(smallPolicy(10), nil, append([]string{"--porcelain"}, tc.args...)...)
				if !slices.Equal(r.classes(), []failure.Class{tc.want}) || r.code != 1 {
					t.Errorf("%s: attempts %v exit %d, want one %s and exit 1\n%s%s", tc.name, r.classes(), r.code, tc.want, r.stdout, r.stderr)
				}
			}
			// A lease that is wrong is stale info too.
			r := c.push(smallPolicy(10), nil, "--porcelain", "--force-with-lease=main:"+base, "origin", "main")
			if !slices.Equal(r.classes(), []failure.Class{failure.Rejected}) {
				t.Errorf("lease: attempts %v\n%s", r.classes(), r.stdout)
			}
			if got := s.ref("refs/heads/main"); got != theirs {
				t.Errorf("server main = %s, want theirs %s", got, theirs)
			}
			// A hook that declines: one attempt, even with a lock message elsewhere.
			s.run(s.dir, "config", "receive.denyDeletes", "true")
			r = c.push(smallPolicy(10), nil, "--porcelain", "origin", ":side")
			if !slices.Equal(r.classes(), []failure.Class{failure.Declined}) || r.code != 1 {
				t.Errorf("deny deletes: attempts %v exit %d\n%s%s", r.classes(), r.code, r.stdout, r.stderr)
			}
		})
	}
}

// TestRebaseConcurrent: 20 pushers (3 unless the tests run at stress size,
// testutil.Scale) each append a commit to one branch at once, with --rebase; every
// commit ends up on the branch, and all but the first to land rebased. Each combo at
// stress size; by default two that have each git on each side and each backend
// (combos).
func TestRebaseConcurrent(t *testing.T) {
	t.Parallel()
	pushers := testutil.Scale(t, 3, 20)
	for _, cb := range combos(t) {
		t.Run(cb.name(), func(t *testing.T) {
			s := newServer(t, cb.server, cb.backend)
			seed := newClient(t, cb.client, s)
			seed.commit("seed", "seed")
			seed.run("push", "-q", "origin", "main")
			clone := cloneOf(t, cb.client, s)
			clients := make([]*client, pushers)
			for i := range clients {
				clients[i] = clone.copy(t)
				clients[i].commit(fmt.Sprintf("job-%02d", i), fmt.Sprint(i))
			}
			policy := retry.Policy{Timeout: 5 * time.Minute, MaxAttempts: 0, InitialDelay: 5 * time.Millisecond,
				MaxDelay: 200 * time.Millisecond, Multiplier: 2, Jitter: 0.5}
			runs := make([]run, pushers)
			var wg sync.WaitGroup
			for i, c := range clients {
				wg.Add(1)
				go func() {
					defer wg.Done()
					runs[i] = c.push(policy, func(p *push.Runner) {
						p.Rebase = true
						p.Clock = nil // real time: the jitter must spread the pushers
					}, "origin", "main")
				}()
			}
			wg.Wait()
			rebased := 0
			for i, r := range runs {
				if r.code != 0 || r.err != nil {
					t.Errorf("pusher %d: exit %d, err %v\n%s", i, r.code, r.err, r.stderr)
				}
				for _, n := range r.notes {
					if strings.HasPrefix(n, "rebased main onto") {
						rebased++
					}
				}
			}
			seed.run("fetch", "-q", "origin")
			log := seed.run("log", "--format=%s", "origin/main")
			for i := range pushers {
				if want := fmt.Sprintf("add job-%02d", i); !slices.Contains(strings.Split(log, "\n"), want) {
					t.Errorf("%q is not on the server's main:\n%s", want, log)
				}
			}
			if n := strings.Count(log, "\n") + 1; n != pushers+1 {
				t.Errorf("server main has %d commits, want %d", n, pushers+1)
			}
			// Every pusher but the first to land started behind, so each must have
			// rebased at least once.
			if rebased < pushers-1 {
				t.Errorf("%d rebases, want at least %d", rebased, pushers-1)
			}
			t.Logf("%d rebases for %d pushers", rebased, pushers)
		})
	}
}

// TestRebaseConflict: a replay that conflicts changes nothing locally (no rebase to
// abort: the commits are replayed without the work tree) and says which files.
func TestRebaseConflict(t *testing.T) {
	t.Parallel()
	for _, cb := range allCombos(t) {
		if cb.backend != "reftable" {
			continue // one server per client version is enough here
		}
		t.Run(cb.name(), func(t *testing.T) {
			t.Parallel()
			s := newServer(t, cb.server, cb.backend)
			c := newClient(t, cb.client, s)
			c.commit("f", "base\n")
			c.run("push", "-q", "origin", "main")
			other := cloneOf(t, cb.client, s)
			theirs := other.commit("f", "theirs\n")
			other.run("push", "-q", "origin", "main")
			mine := c.commit("f", "mine\n")
			status := c.run("status", "--porcelain=v1", "--ignored")

			r := c.push(smallPolicy(10), func(p *push.Runner) { p.Rebase = true }, "origin", "main")
			var re *push.RebaseError
			if !errors.As(r.err, &re) || !re.Conflict || re.Onto != theirs || re.Orig != mine || !slices.Equal(re.Paths, []string{"f"}) {
				t.Fatalf("err = %#v, want a conflict in f replaying %s onto %s", r.err, mine, theirs)
			}
			if r.code != 1 {
				t.Errorf("exit %d, want 1", r.code)
			}
			if got := c.run("rev-parse", "HEAD"); got != mine {
				t.Errorf("HEAD = %s, want %s", got, mine)
			}
			if got := c.run("symbolic-ref", "HEAD"); got != "refs/heads/main" {
				t.Errorf("HEAD -> %s", got)
			}
			if got := c.run("status", "--porcelain=v1", "--ignored"); got != status {
				t.Errorf("work tree status %q, was %q", got, status)
			}
			if got := s.ref("refs/heads/main"); got != theirs {
				t.Errorf("server main = %s, want %s", got, theirs)
			}
			if !strings.Contains(re.Error(), "conflict in f") || !strings.Contains(re.Error(), "nothing was changed locally") {
				t.Errorf("message %q does not say what conflicted and that nothing changed", re.Error())
			}
		})
	}
}

// TestRebaseDirtyWorkTree: the replay lands even when the work tree cannot follow (an
// uncommitted change in a file the remote changed): the rebased commit is pushed in
// place of the branch's, and the branch, HEAD and the uncommitted change stay.
func TestRebaseDirtyWorkTree(t *testing.T) {
	t.Parallel()
	g := testutil.NewGit(t)
	s := newServer(t, g, "files")
	c := newClient(t, g, s)
	c.commit("f", "base\n")
	c.run("push", "-q", "origin", "main")
	other := cloneOf(t, g, s)
	other.commit("f", "theirs\n")
	other.run("push", "-q", "origin", "main")
	mine := c.commit("g", "mine\n")
	dirty := filepath.Join(c.dir, "f")
	if err := os.WriteFile(dirty, []byte("uncommitted\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := c.push(smallPolicy(10), func(p *push.Runner) { p.Rebase = true }, "origin", "main")
	if r.code != 0 || r.err != nil {
		t.Fatalf("exit %d, err %v\n%s", r.code, r.err, r.stderr)
	}
	if b, _ := os.ReadFile(dirty); string(b) != "uncommitted\n" {
		t.Errorf("the uncommitted change is gone: %q", b)
	}
	if got := c.run("rev-parse", "HEAD"); got != mine {
		t.Errorf("HEAD = %s, want %s", got, mine)
	}
	tip := s.ref("refs/heads/main")
	if got := gitRun(t, g.Path, s.dir, s.env, "log", "--format=%s", "-2", tip); got != "add g\nadd f" {
		t.Errorf("server main: %q", got)
	}
	if len(r.notes) == 0 || !strings.Contains(r.notes[len(r.notes)-1], "main stays at "+mine[:12]) {
		t.Errorf("notes %q do not say the branch stayed", r.notes)
	}
}

// TestServerRefDeletedDuringPush: while refretry pushes a new commit, four processes
// (two unless the tests run at stress size) on the server keep deleting its loose
// refs, one at a time each, and re-creating them when none is left. On the files
// backend, git 2.55's receive-pack lets its connectivity check die on a ref deleted
// while it lists the refs ("remote: fatal: bad object <ref>", the push rejected with
// "missing necessary objects" before any ref moved): refretry checks the remote and
// pushes again, and every round's commit lands. Whether a round meets the race is up
// to timing (about one in twenty): by default one round per server checks the outcome
// under the churn (and TestClassifyForges replays the race's captured output, "a
// server ref deleted under the connectivity check"); at stress size twenty rounds
// run, and how many met the race is logged, not required (see below).
func TestServerRefDeletedDuringPush(t *testing.T) {
	t.Parallel()
	churners := testutil.Scale(t, 2, 4)
	cur := testutil.NewGit(t)
	for _, server := range []struct {
		git     testutil.Git
		backend string
	}{{testutil.SystemGit(t), "files"}, {cur, "files"}, {cur, "reftable"}} {
		t.Run(server.git.Name()+"-"+server.backend, func(t *testing.T) {
			t.Parallel()
			s := newServer(t, server.git, server.backend)
			s.run(s.dir, "config", "maintenance.auto", "false") // its background pack-refs would race the churn
			c := newClient(t, cur, s)
			base := c.commit("a", "a")
			c.run("push", "-q", "origin", "main")
			// Counted and logged, not required: on 2026-12-02 none of 300 stress-size
			// rounds against git 2.55's files backend met the race, with the race
			// detector and without it, where the last stop saw about one in twenty.
			// TestClassifyForges replays the race's captured output, so what refretry
			// makes of it stays checked; this test checks every round's outcome.
			testutil.Hunt(t, 1, 20, 20, false, func(round int) (met bool) {
				head := c.commit("a", fmt.Sprint(round))
				stop := make(chan struct{})
				var churn sync.WaitGroup
				for d := range churners {
					churn.Add(1)
					go func() { defer churn.Done(); churnRefs(s, fmt.Sprintf("refs/doomed/%d", d), base, stop) }()
				}
				r := c.push(smallPolicy(20), nil, "--porcelain", "origin", "main")
				close(stop)
				churn.Wait()
				if r.code != 0 || r.err != nil {
					t.Fatalf("round %d: exit %d, err %v, attempts %v\nstdout:\n%s\nstderr:\n%s", round, r.code, r.err, r.classes(), r.stdout, r.stderr)
				}
				if got := s.ref("refs/heads/main"); got != head {
					t.Fatalf("round %d: server main = %q, want %s", round, got, head)
				}
				return slices.Contains(r.classes(), failure.Unknown)
			})
		})
	}
}

// churnRefs creates 25 loose refs under prefix at value on the server and deletes them
// one at a time, over and over, until stop is closed.
func churnRefs(s *server, prefix, value string, stop <-chan struct{}) {
	const n = 25
	var create strings.Builder
	for i := range n {
		fmt.Fprintf(&create, "update %s/%d %s\n", prefix, i, value)
	}
	for {
		cmd := exec.Command(s.git.Path, "update-ref", "--stdin")
		cmd.Dir, cmd.Env, cmd.Stdin = s.dir, s.env, strings.NewReader(create.String())
		_ = cmd.Run() // on reftable, another churner may hold the lock: the deletes below go on
		for i := range n {
			select {
			case <-stop:
				return
			default:
			}
			del := exec.Command(s.git.Path, "update-ref", "-d", fmt.Sprintf("%s/%d", prefix, i))
			del.Dir, del.Env = s.dir, s.env
			_ = del.Run()
		}
	}
}
