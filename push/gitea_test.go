package push_test

import (
	"errors"
	"fmt"
	"github.com/refretry/refretry/failure"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/refretry/refretry/internal/harness/gitea"
	"github.com/refretry/refretry/internal/harness/hermetic"
	"github.com/refretry/refretry/internal/harness/testutil"
	"github.com/refretry/refretry/push"
)

// A real forge: Gitea 1.26 (internal/harness/gitea), whose hooks and policies stand between
// the client and git's receive-pack, run once for the tests below. They skip with one
// line when no Gitea binary was built (scripts/gitea.sh build; CI builds it).

// giteaClone is a job's work tree: a depth-1 clone of the Gitea repository's main on
// a detached HEAD, as a pull_request checkout makes it.
func giteaClone(t *testing.T, g testutil.Git, url string) *client {
	t.Helper()
	root := t.TempDir()
	c := &client{t: t, git: g, dir: filepath.Join(root, "work"), env: append(hermetic.Env(os.Environ(), root), "GIT_TERMINAL_PROMPT=0")}
	gitRun(t, g.Path, root, c.env, "clone", "-q", "--depth=1", "--branch=main", url, c.dir)
	c.run("checkout", "-q", "--detach")
	return c
}

func startGitea(t *testing.T, g testutil.Git) *gitea.Instance {
	t.Helper()
	bin := gitea.Need(t)
	inst, err := gitea.Start(gitea.Options{Binary: bin, Git: g.Path})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(inst.Close)
	return inst
}

// TestGitea: through a real Gitea, the forge's messages mean what docs/push.md says:
// a lost race (every push of the round read the same tip; the proxy holds them until
// all have arrived) lands every job with --rebase from a detached depth-1 checkout,
// and fails after one attempt without; a protected branch is declined after one
// attempt with Gitea's rule; a held ref lock on the server is waited out.
func TestGitea(t *testing.T) {
	t.Parallel()
	g := testutil.NewGit(t)
	inst := startGitea(t, g)
	const jobs = 4

	for _, rebase := range []bool{true, false} {
		t.Run(fmt.Sprintf("lost race/rebase=%v", rebase), func(t *testing.T) {
			repo := fmt.Sprintf("race-%v", rebase)
			if err := inst.CreateRepo(repo); err != nil {
				t.Fatal(err)
			}
			clients := make([]*client, jobs)
			args := make([][]string, jobs)
			for i := range clients {
				clients[i] = giteaClone(t, g, inst.URL(repo))
				clients[i].commit(fmt.Sprintf("job-%d", i), fmt.Sprint(i))
				args[i] = []string{"origin", "HEAD:main"}
			}
			inst.HoldPushes(jobs)
			runs := concurrently(clients, func(p *push.Runner) { p.Rebase = rebase }, args)
			landed := 0
			for i, r := range runs {
				if r.code == 0 {
					landed++
					continue
				}
				if rebase || !slices.Equal(r.classes(), []failure.Class{failure.Behind}) {
					t.Errorf("job %d: exit %d, attempts %v\n%s", i, r.code, r.classes(), r.stderr)
				}
			}
			lost := 0
			for _, r := range runs {
				if len(r.classes()) > 1 || r.code != 0 {
					lost++
				}
			}
			if lost < jobs-1 {
				t.Errorf("only %d of %d jobs lost the first round: the race was not reproduced", lost, jobs)
			}
			tip, err := inst.Branch(repo, "main")
			if err != nil {
				t.Fatal(err)
			}
			check := giteaClone(t, g, inst.URL(repo))
			check.run("fetch", "-q", "--unshallow", "origin", "main")
			log := check.run("log", "--format=%s", tip)
			for i := range jobs {
				n := strings.Count(log+"\n", fmt.Sprintf("add job-%d\n", i))
				if rebase && n != 1 || !rebase && n > 1 {
					t.Errorf("job %d's commit is on main %d times:\n%s", i, n, log)
				}
			}
			if want := map[bool]int{true: jobs, false: 1}[rebase]; landed != want {
				t.Errorf("%d jobs landed, want %d", landed, want)
			}
		})
	}

	t.Run("protected branch", func(t *testing.T) {
		if err := inst.CreateRepo("protected"); err != nil {
			t.Fatal(err)
		}
		if err := inst.ProtectBranch("protected", "main"); err != nil {
			t.Fatal(err)
		}
		c := giteaClone(t, g, inst.URL("protected"))
		c.commit("f", "x")
		r := c.push(smallPolicy(5), func(p *push.Runner) { p.Rebase = true }, "origin", "HEAD:main")
		if r.code != 1 || !slices.Equal(r.classes(), []failure.Class{failure.Declined}) {
			t.Fatalf("exit %d, attempts %v, want declined after one\n%s", r.code, r.classes(), r.stderr)
		}
		var e *failure.Error
		if !errors.As(r.err, &e) || !slices.Contains(e.Policy, "Not allowed to push to protected branch main") {
			t.Errorf("policy %q, err %v", e.Policy, r.err)
		}
	})

	t.Run("ref lock held on the server", func(t *testing.T) {
		if err := inst.CreateRepo("locked"); err != nil {
			t.Fatal(err)
		}
		c := giteaClone(t, g, inst.URL("locked"))
		head := c.commit("f", "x")
		lock := filepath.Join(inst.RepoPath("locked"), "refs", "heads", "lk.lock")
		if err := os.WriteFile(lock, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		var once sync.Once
		release := func() { once.Do(func() { os.Remove(lock) }) }
		defer release()
		r := c.push(smallPolicy(0), func(p *push.Runner) {
			p.Clock = nil
			afterAttempt(p, 2, release)
		}, "origin", "HEAD:refs/heads/lk")
		if r.code != 0 || len(r.classes()) < 3 || r.classes()[0] != failure.LockContention {
			t.Fatalf("exit %d, attempts %v, want lock contention, then success once released\n%s", r.code, r.classes(), r.stderr)
		}
		if got, _ := inst.Branch("locked", "lk"); got != head {
			t.Errorf("lk = %s, want %s", got, head)
		}
	})
}
