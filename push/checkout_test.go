package push_test

import (
	"errors"
	"fmt"
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

// shallowClone makes a client as actions/checkout makes a job's work tree: a depth-1
// fetch of main, checked out on the branch main (detach: on a detached HEAD instead,
// as for a pull request or `ref: ${{ github.sha }}`).
func shallowClone(t testing.TB, g testutil.Git, s *server, detach bool) *client {
	t.Helper()
	c := newClient(t, g, s)
	c.run("fetch", "-q", "--depth=1", "origin", "main")
	if detach {
		c.run("checkout", "-q", "--detach", "FETCH_HEAD")
	} else {
		c.run("reset", "-q", "--hard", "FETCH_HEAD")
	}
	return c
}

// checkoutForms are the ways CI jobs push their commit to main.
var checkoutForms = []struct {
	name   string
	detach bool
	args   func(c *client, commit string) []string
	// headAfter says where HEAD must be after a push that landed commit's
	// replay as tip: "tip" (moved with its work tree), or "commit" (left alone).
	headAfter string
}{
	{"branch", false, func(*client, string) []string { return []string{"origin", "main"} }, "tip"},
	{"detached HEAD:main", true, func(*client, string) []string { return []string{"origin", "HEAD:main"} }, "tip"},
	{"sha:refs/heads/main", true, func(_ *client, c string) []string { return []string{"origin", c + ":refs/heads/main"} }, "commit"},
	{"other branch:main", false, func(c *client, _ string) []string {
		c.run("branch", "-q", "results")
		c.run("checkout", "-q", "-b", "elsewhere", "HEAD~0")
		return []string{"origin", "results:main"}
	}, "commit"},
}

// TestRebaseFromCICheckouts: N depth-1 jobs (6; 2 unless the tests run at stress
// size, testutil.Scale), each committing a file of its own, push to main at once with
// --rebase, in every form a CI checkout pushes, from either client git (each form with
// each git at stress size; by default form i with git i%2, testutil.Cells): every job
// lands, all but the first to land rebased, every commit is on main exactly once with
// its author and message, and the job's HEAD is where the documentation says.
func TestRebaseFromCICheckouts(t *testing.T) {
	t.Parallel()
	jobs := testutil.Scale(t, 2, 6)
	server := testutil.NewGit(t)
	type cell struct {
		g    testutil.Git
		form int
	}
	var cells []cell
	for _, g := range []testutil.Git{testutil.SystemGit(t), server} {
		for form := range checkoutForms {
			cells = append(cells, cell{g, form})
		}
	}
	// 2.39 with forms 0 and 2, 2.55 with forms 1 and 3: each git, each form.
	for _, cl := range testutil.Cells(t, cells, 0, 5, 2, 7) {
		g, form := cl.g, checkoutForms[cl.form]
		t.Run(g.Name()+"/"+form.name, func(t *testing.T) {
			t.Parallel()
			s := newServer(t, server, "files")
			seed := newClient(t, g, s)
			seed.commit("seed", "seed\n")
			seed.commit("seed2", "seed\n") // depth 1 must cut something
			seed.run("push", "-q", "origin", "main")
			clone := shallowClone(t, g, s, form.detach)
			if got := clone.run("rev-parse", "--is-shallow-repository"); got != "true" {
				t.Fatalf("clone is not shallow: %s", got)
			}
			clients := make([]*client, jobs)
			commits := make([]string, jobs)
			args := make([][]string, jobs)
			for i := range clients {
				c := clone.copy(t)
				commits[i] = c.commit(fmt.Sprintf("job-%02d", i), fmt.Sprint(i))
				args[i] = form.args(c, commits[i])
				clients[i] = c
			}
			runs := concurrently(clients, func(p *push.Runner) { p.Rebase = true }, args)
			rebased := 0
			for i, r := range runs {
				if r.code != 0 || r.err != nil {
					t.Errorf("job %d: exit %d, err %v\n%s", i, r.code, r.err, r.stderr)
				}
				if slices.ContainsFunc(r.notes, func(n string) bool { return strings.HasPrefix(n, "rebased ") }) {
					rebased++
				}
			}
			// Every job started at the same tip, so all but the first to land were
			// behind and must have rebased: the jobs met each other.
			if rebased < jobs-1 {
				t.Errorf("%d jobs rebased, want at least %d", rebased, jobs-1)
			}
			tip := s.ref("refs/heads/main")
			log := gitRun(t, server.Path, s.dir, s.env, "log", "--format=%s|%an|%ae", tip)
			for i := range jobs {
				want := fmt.Sprintf("add job-%02d|%s", i, "A U Thor|author@example.com")
				if n := strings.Count(log+"\n", want+"\n"); n != 1 {
					t.Errorf("%q is on main %d times:\n%s", want, n, log)
				}
			}
			for i, c := range clients {
				head := c.run("rev-parse", "HEAD")
				switch form.headAfter {
				case "commit":
					if head != commits[i] {
						t.Errorf("job %d: HEAD moved to %s, want it left at %s", i, head, commits[i])
					}
					if form.name == "other branch:main" {
						// The pushed branch moved to what landed.
						b := c.run("rev-parse", "results")
						if !isAncestor(t, server, s, b, tip) || c.run("log", "-1", "--format=%s", b) != fmt.Sprintf("add job-%02d", i) {
							t.Errorf("job %d: branch results at %s, not the commit that landed", i, b)
						}
					}
				case "tip":
					// HEAD is the commit that landed: on main, with this job's file.
					if !isAncestor(t, server, s, head, tip) {
						t.Errorf("job %d: HEAD %s is not on main", i, head)
					}
					if got := c.run("log", "-1", "--format=%s", "HEAD"); got != fmt.Sprintf("add job-%02d", i) {
						t.Errorf("job %d: HEAD is %q", i, got)
					}
					if st := c.run("status", "--porcelain"); st != "" {
						t.Errorf("job %d: work tree not clean after the rebase:\n%s", i, st)
					}
				}
			}
		})
	}
}

// TestRebaseAfterShallowFetch: a depth-1 job whose tool fetched the branch again with
// --depth=1 before pushing (git-auto-commit-action does) has the remote's new tip
// without its parents, so its history does not meet the job's. --rebase deepens it
// until it does and replays the job's one commit, not the job's base with it: before,
// the push failed with "cannot replay: <base> is not a commit with one parent". Each
// client git with 3 and with 40 commits landed at stress size; by default 2.39 with
// 40 and 2.55 with 3 (testutil.Cells).
func TestRebaseAfterShallowFetch(t *testing.T) {
	t.Parallel()
	server := testutil.NewGit(t)
	type cell struct {
		g      testutil.Git
		landed int
	}
	var cells []cell
	for _, g := range []testutil.Git{testutil.SystemGit(t), server} {
		for _, landed := range []int{3, 40} { // 40: more than the first round's 8
			cells = append(cells, cell{g, landed})
		}
	}
	for _, cl := range testutil.Cells(t, cells, 1, 2) {
		g, landed := cl.g, cl.landed
		t.Run(fmt.Sprintf("%s/%d landed", g.Name(), landed), func(t *testing.T) {
			t.Parallel()
			s := newServer(t, server, "files")
			seed := newClient(t, g, s)
			seed.commit("seed", "seed\n")
			seed.commit("seed2", "seed\n")
			seed.run("push", "-q", "origin", "main")
			job := shallowClone(t, g, s, false)
			others := make([]string, landed)
			for i := range others {
				others[i] = fmt.Sprintf("other-%02d", i)
			}
			seed.commitEach("main", "x\n", others...)
			seed.run("push", "-q", "origin", "main")
			mine := job.commit("job", "job\n")
			job.run("fetch", "-q", "--depth=1", "origin", "main")
			runs := concurrently([]*client{job}, func(p *push.Runner) { p.Rebase = true }, [][]string{{"origin", "main"}})
			if r := runs[0]; r.code != 0 || r.err != nil {
				t.Fatalf("exit %d, err %v\n%s", r.code, r.err, r.stderr)
			}
			tip := s.ref("refs/heads/main")
			log := gitRun(t, server.Path, s.dir, s.env, "log", "--format=%s", tip)
			want := []string{"add job"}
			for i := landed - 1; i >= 0; i-- {
				want = append(want, fmt.Sprintf("add other-%02d", i))
			}
			want = append(want, "add seed2", "add seed")
			if got := strings.Split(log, "\n"); !slices.Equal(got, want) {
				t.Errorf("main's history %q, want %q", got, want)
			}
			if head := job.run("rev-parse", "HEAD"); head != tip || head == mine {
				t.Errorf("HEAD %s after the push, want main's new tip %s", head, tip)
			}
		})
	}
}

// TestRegenerateSharedFile: every job (6; 2 unless the tests run at stress size,
// testutil.Scale) appends its line to one results file, so the replay conflicts for
// all but the first to land; --regenerate resets to the remote's tip, runs the
// generator there, and pushes what it wrote. Every line lands once, each job's commit
// keeps its author and message, and the job's own commit is kept. Each of the first
// three checkout forms with and without --rebase at stress size; by default form i
// with rebase=i%2 (testutil.Cells).
func TestRegenerateSharedFile(t *testing.T) {
	t.Parallel()
	jobs := testutil.Scale(t, 2, 6)
	g := testutil.NewGit(t)
	type cell struct {
		form   int
		rebase bool
	}
	var cells []cell
	for form := range checkoutForms[:3] {
		for _, rebase := range []bool{false, true} {
			cells = append(cells, cell{form, rebase})
		}
	}
	for _, cl := range testutil.Cells(t, cells, 0, 3, 4) {
		form, rebase := checkoutForms[cl.form], cl.rebase
		t.Run(fmt.Sprintf("%s/rebase=%v", form.name, rebase), func(t *testing.T) {
			t.Parallel()
			s := newServer(t, g, "files")
			seed := newClient(t, g, s)
			seed.commit("results.csv", "job\n")
			seed.run("push", "-q", "origin", "main")
			clients := make([]*client, jobs)
			commits := make([]string, jobs)
			args := make([][]string, jobs)
			generator := make([]string, jobs)
			clone := shallowClone(t, g, s, form.detach)
			for i := range clients {
				c := clone.copy(t)
				line := fmt.Sprintf("job-%02d", i)
				// The job's generator: its own result, added to whatever is there.
				generator[i] = fmt.Sprintf("grep -qx %s results.csv || echo %s >> results.csv", line, line)
				if err := os.WriteFile(filepath.Join(c.dir, "results.csv"), []byte("job\n"+line+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				c.run("commit", "-q", "-am", "result of "+line)
				commits[i] = c.run("rev-parse", "HEAD")
				args[i] = form.args(c, commits[i])
				clients[i] = c
			}
			var wg sync.WaitGroup
			runs := make([]run, jobs)
			for i, c := range clients {
				wg.Add(1)
				go func() {
					defer wg.Done()
					runs[i] = c.push(concurrentPolicy, func(p *push.Runner) {
						p.Rebase, p.Regenerate, p.Clock = rebase, generator[i], nil
					}, args[i]...)
				}()
			}
			wg.Wait()
			for i, r := range runs {
				if r.code != 0 || r.err != nil {
					t.Errorf("job %d: exit %d, err %v\n%s", i, r.code, r.err, r.stderr)
				}
			}
			tip := s.ref("refs/heads/main")
			content := gitRun(t, g.Path, s.dir, s.env, "show", tip+":results.csv")
			for i := range jobs {
				if n := strings.Count(content+"\n", fmt.Sprintf("job-%02d\n", i)); n != 1 {
					t.Errorf("job-%02d is in results.csv %d times:\n%s", i, n, content)
				}
			}
			log := gitRun(t, g.Path, s.dir, s.env, "log", "--format=%s", tip)
			for i := range jobs {
				if !slices.Contains(strings.Split(log, "\n"), fmt.Sprintf("result of job-%02d", i)) {
					t.Errorf("no commit %q on main:\n%s", fmt.Sprintf("result of job-%02d", i), log)
				}
			}
			regenerated := 0
			for i, c := range clients {
				if kept := c.run("for-each-ref", "--format=%(objectname)", push.OriginalRef); kept != "" {
					regenerated++
					if kept != commits[i] {
						t.Errorf("job %d: %s keeps %s, want its own commit %s", i, push.OriginalRef, kept, commits[i])
					}
				}
			}
			if regenerated < jobs-1 {
				t.Errorf("%d jobs regenerated, want at least %d (all but the first to land)", regenerated, jobs-1)
			}
		})
	}
}

// TestRegenerateFails: a generator that fails stops the push with its output, after one
// regeneration; one that changes nothing ends it successfully.
func TestRegenerateFails(t *testing.T) {
	t.Parallel()
	g := testutil.NewGit(t)
	s := newServer(t, g, "files")
	seed := newClient(t, g, s)
	seed.commit("results.csv", "a\n")
	seed.run("push", "-q", "origin", "main")
	other := cloneOf(t, g, s)
	other.commit("results.csv", "a\nb\n")
	other.run("push", "-q", "origin", "main")

	c := cloneOf(t, g, s)
	c.run("reset", "-q", "--hard", "HEAD~1")
	mine := c.commit("results.csv", "a\nc\n")
	r := c.push(smallPolicy(10), func(p *push.Runner) { p.Regenerate = "echo generator broke >&2; exit 3" }, "origin", "main")
	var ge *push.RegenerateError
	if r.code != 1 || !errors.As(r.err, &ge) || ge.Status != 3 || !strings.Contains(ge.Error(), "generator broke") {
		t.Fatalf("exit %d, err %v", r.code, r.err)
	}
	if kept := c.run("rev-parse", push.OriginalRef+"refs/heads/main"); kept != mine {
		t.Errorf("the job's commit is not kept: %s", kept)
	}

	c2 := cloneOf(t, g, s)
	c2.run("reset", "-q", "--hard", "HEAD~1")
	if err := os.WriteFile(filepath.Join(c2.dir, "results.csv"), []byte("a\nb\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c2.run("commit", "-q", "-am", "the same result as the remote's, by another job")
	r = c2.push(smallPolicy(10), func(p *push.Runner) { p.Regenerate = "true" }, "origin", "main")
	if r.code != 0 || r.err != nil || len(r.notes) == 0 || !strings.Contains(r.notes[len(r.notes)-1], "changed nothing") {
		t.Errorf("nothing to push: exit %d, err %v, notes %q", r.code, r.err, r.notes)
	}
}

var concurrentPolicy = retry.Policy{Timeout: 5 * time.Minute, InitialDelay: 5 * time.Millisecond,
	MaxDelay: 200 * time.Millisecond, Multiplier: 2, Jitter: 0.5}

// concurrently runs one push per client at once, on real time, and returns each run.
func concurrently(clients []*client, configure func(*push.Runner), args [][]string) []run {
	var wg sync.WaitGroup
	runs := make([]run, len(clients))
	for i, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runs[i] = c.push(concurrentPolicy, func(p *push.Runner) {
				configure(p)
				p.Clock = nil // real time: the jitter must spread the pushers
			}, args[i]...)
		}()
	}
	wg.Wait()
	return runs
}

func isAncestor(t testing.TB, g testutil.Git, s *server, a, b string) bool {
	t.Helper()
	cmd := exec.Command(g.Path, "merge-base", "--is-ancestor", a, b)
	cmd.Dir, cmd.Env = s.dir, s.env
	return cmd.Run() == nil
}
