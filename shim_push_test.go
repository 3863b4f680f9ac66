//go:build unix

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/refretry/refretry/internal/harness/testutil"
)

// shimPushLog is a fresh log file for refretry's records, and what it holds: how many
// push runs refretry made, and the highest attempt number any of them reached.
func shimPushLog(t *testing.T) (path string, read func() (runs, maxAttempt int)) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "log.jsonl")
	return path, func() (int, int) {
		t.Helper()
		b, err := os.ReadFile(path)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		runs, maxAttempt := 0, 0
		for line := range strings.Lines(string(b)) {
			if strings.Contains(line, `"msg":"summary"`) && strings.Contains(line, `"command":"push"`) {
				runs++
			}
			for n := 1; n <= 50; n++ {
				if strings.Contains(line, `"msg":"attempt"`) && strings.Contains(line, fmt.Sprintf(`"attempt":%d,`, n)) {
					maxAttempt = max(maxAttempt, n)
				}
			}
		}
		return runs, maxAttempt
	}
}

// refState is every ref of a repository (git dir) with its value, to put back. It
// starts a git only when the refs may have changed since it last looked
// (testutil.RefsRead).
func refState(r *testutil.Repo, gitDir string) string {
	return testutil.RefsRead("refState", gitDir, "", func() string {
		return r.Run("--git-dir="+gitDir, "for-each-ref", "--format=%(refname) %(objectname)")
	})
}

// restoreRefs puts the refs of gitDir back to state: each listed ref to its value,
// any other ref deleted. Refs already as state are left alone.
func restoreRefs(t *testing.T, r *testutil.Repo, gitDir, state string) {
	t.Helper()
	now := refState(r, gitDir)
	if now == state {
		return
	}
	want := map[string]string{}
	var b strings.Builder
	for line := range strings.Lines(state) {
		name, oid, _ := strings.Cut(strings.TrimSpace(line), " ")
		want[name] = oid
		fmt.Fprintf(&b, "update %s %s\n", name, oid)
	}
	for line := range strings.Lines(now) {
		if name, _, _ := strings.Cut(strings.TrimSpace(line), " "); want[name] == "" {
			fmt.Fprintf(&b, "delete %s\n", name)
		}
	}
	cmd := exec.Command(r.Git.Path, "--git-dir="+gitDir, "update-ref", "--no-deref", "--stdin", "-m", "test: restore")
	cmd.Env, cmd.Stdin = r.Env, strings.NewReader(b.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("restoring the refs of %s: %v\n%s", gitDir, err, out)
	}
}

// TestShimPushSameAsGit: `git push` through the shim runs in refretry (its log has the
// push) and gives git's bytes and exit code where nothing was retried: rejections that
// reach the tool unchanged (fetch first: the lost race of a job that did not opt in to
// rebasing; with --porcelain; options after the refspecs), and pushes that a job's
// opt-in (REFRETRY_PUSH_REBASE=1) never rebases — a force push, a tag, a lease —
// pushed once. Pushes that change the remote run on the same state twice: the refs of
// the remote and the client are put back between git and the shim.
func TestShimPushSameAsGit(t *testing.T) {
	t.Parallel()
	for _, bc := range backends(t) {
		t.Run(bc.git.Name()+"/"+bc.backend, func(t *testing.T) {
			t.Parallel()
			s := newPushSetup(t, bc.git, bc.backend)
			shimGit, env := shimSetup(t, s.client)
			logFile, readLog := shimPushLog(t)
			env = append(env, "REFRETRY_LOG_FILE="+logFile)
			optIn := append(env[:len(env):len(env)], "REFRETRY_PUSH_REBASE=1")
			c := s.client
			c.Run("tag", "v2")
			cases := []struct {
				name   string
				env    []string
				args   []string
				code   int
				writes bool // the push changes refs: put them back after git's
			}{
				{"fetch first", env, []string{"push", "origin", "main"}, 1, false},
				{"fetch first, set-upstream and atomic after the refspec", env, []string{"push", "--set-upstream", "origin", "HEAD:main", "--follow-tags", "--atomic"}, 1, false},
				{"fetch first, porcelain after the refspec", env, []string{"push", "origin", "main", "--porcelain"}, 1, false},
				{"fetch first, two refs, not atomic", env, []string{"push", "origin", "main", "main:refs/heads/other"}, 1, true},
				{"tag exists, opted in", optIn, []string{"push", "origin", "v1"}, 1, false},
				{"stale lease, opted in", optIn, []string{"push", "--force-with-lease=main:" + c.Commit, "origin", "main"}, 1, false},
				{"force push, opted in", optIn, []string{"push", "-f", "origin", "main"}, 0, true},
				{"force refspec, porcelain, opted in", optIn, []string{"push", "--porcelain", "origin", "+main:main"}, 0, true},
				{"new tag, opted in", optIn, []string{"push", "origin", "v2"}, 0, true},
				{"new tag, porcelain, opted in", optIn, []string{"push", "--porcelain", "origin", "refs/tags/v2"}, 0, true},
				{"deletion, opted in", optIn, []string{"push", "origin", ":side"}, 0, true},
				{"tag exists, dry run, opted in", optIn, []string{"push", "origin", "v1:v1", "--porcelain", "--dry-run"}, 1, false},
				{"bad option", env, []string{"push", "--frobnicate", "origin"}, 129, false},
			}
			remoteState, clientState := refState(c, s.remote), refState(c, c.GitDir)
			for _, tc := range cases {
				want := runCmd(t, c.Dir, tc.env, "", c.Git.Path, tc.args...)
				if tc.writes {
					restoreRefs(t, c, s.remote, remoteState)
					restoreRefs(t, c, c.GitDir, clientState)
				}
				runsBefore, _ := readLog()
				got := runCmd(t, c.Dir, tc.env, "", shimGit, tc.args...)
				if tc.writes {
					restoreRefs(t, c, s.remote, remoteState)
					restoreRefs(t, c, c.GitDir, clientState)
				}
				if want.code != tc.code {
					t.Errorf("%s: git exited %d, the test expects %d\n%s", tc.name, want.code, tc.code, want.stderr)
				}
				if got != want {
					t.Errorf("%s: through the shim:\n%d\n%q\n%q\ngit:\n%d\n%q\n%q", tc.name, got.code, got.stdout, got.stderr, want.code, want.stdout, want.stderr)
				}
				if runs, attempts := readLog(); tc.code != 129 && runs != runsBefore+1 {
					t.Errorf("%s: refretry logged %d pushes, want 1: the shim did not run it", tc.name, runs-runsBefore)
				} else if attempts > 1 {
					t.Errorf("%s: %d attempts, want 1", tc.name, attempts)
				}
			}
		})
	}
}

// pushRebaseCell is a git and backend of backends, with the job's push-rebase opt-in
// (REFRETRY_PUSH_REBASE=1) or without it.
type pushRebaseCell struct {
	bc    backendCase
	optIn bool
}

func (c pushRebaseCell) name() string {
	return fmt.Sprintf("%s/%s/push-rebase=%v", c.bc.git.Name(), c.bc.backend, c.optIn)
}

// pushRebaseCells are the cells of the shim's tests of many jobs pushing at once: at
// the default size each git and backend of backends with the opt-in or without it
// (testutil.Cells), at the stress size both on each.
func pushRebaseCells(t *testing.T) []pushRebaseCell {
	var cells []pushRebaseCell
	for _, bc := range backends(t) {
		cells = append(cells, pushRebaseCell{bc, true}, pushRebaseCell{bc, false})
	}
	return testutil.Cells(t, cells, 0, 3)
}

// autoCommitJob is a job of the shape stefanzweifel/git-auto-commit-action gives: it
// commits its file and pushes with plain git, no retry of its own; odd jobs push as
// the action does when given a branch.
const autoCommitJob = `set -e
echo "$JOB" > "job-$JOB.txt"
git add -A
git commit -q -m "job $JOB"
if [ $((JOB % 2)) = 0 ]; then
	git push origin results
else
	git push --set-upstream origin HEAD:results --follow-tags --atomic
fi
`

// gitRejection is git's line for a lost race on results, from git's own checks (fetch
// first) or from the server's compare-and-swap.
var gitRejection = regexp.MustCompile(`(?m)^ ! \[rejected\]        (results|HEAD) -> results \(fetch first\)$|^ ! \[remote rejected\] (results|HEAD) -> results \(`)

// runJob runs script with bash in dir; a job that has not ended after two minutes,
// twice refretry's default budget, is killed and reported with code -1.
func runJob(dir string, env []string, script string) result {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	cmd.Dir, cmd.Env = dir, env
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		return result{out.String(), errOut.String() + "\n(killed after 5 minutes)", -1}
	case errors.As(err, &ee):
		return result{out.String(), errOut.String(), ee.ExitCode()}
	case err != nil:
		return result{out.String(), err.Error(), -1}
	}
	return result{out.String(), errOut.String(), 0}
}

// TestShimPushAutoCommit runs N jobs of autoCommitJob at once against one branch of a
// file:// remote, through the installed shim, each in its own clone made before any
// pushes (so every job's commit has the same parent: only one can land without a
// rebase). With REFRETRY_PUSH_REBASE=1 every job exits 0, every commit lands once,
// and each job's branch is its pushed commit, on the remote's branch; without it,
// exactly one job lands and every other gets git's own rejection and exit code 1.
// At the default size each git and backend of backends runs one of the two
// (testutil.Cells); the stress size runs both on each.
func TestShimPushAutoCommit(t *testing.T) {
	t.Parallel()
	for _, c := range pushRebaseCells(t) {
		bc, optIn := c.bc, c.optIn
		t.Run(c.name(), func(t *testing.T) {
			t.Parallel()
			seed := testutil.NewRepo(t, bc.git, bc.backend)
			remote := filepath.Join(t.TempDir(), "remote.git")
			initArgs := []string{"init", "-q", "--bare", "-b", "main"}
			if bc.backend == "reftable" {
				initArgs = append(initArgs, "--ref-format=reftable")
			}
			seed.Run(append(initArgs, remote)...)
			seed.Run("push", "-q", "file://"+remote, "main:results")
			jobs := testutil.Scale(t, 4, 6)
			shimGit, env := shimSetup(t, seed)
			if optIn {
				env = append(env, "REFRETRY_PUSH_REBASE=1")
			}
			dirs, results := runClonedJobs(t, seed, remote, "results", env, jobs, autoCommitJob)
			if got := runCmd(t, dirs[0], env, "", "bash", "-c", "command -v git"); strings.TrimSpace(got.stdout) != shimGit {
				t.Fatalf("the jobs' git is %q, not the shim %s", got.stdout, shimGit)
			}
			log := seed.Run("--git-dir="+remote, "log", "--format=%s", "results")
			landed := 0
			for j, res := range results {
				n := strings.Count(log+"\n", fmt.Sprintf("job %d\n", j))
				landed += n
				switch {
				case n > 1:
					t.Errorf("job %d's commit landed %d times:\n%s", j, n, log)
				case optIn && (res.code != 0 || n != 1):
					t.Errorf("job %d: exit %d, landed %d times\n%s", j, res.code, n, res.stderr)
				case optIn:
					head := seed.Run("-C", dirs[j], "rev-parse", "HEAD")
					branch := seed.Run("-C", dirs[j], "symbolic-ref", "HEAD")
					subject := seed.Run("-C", dirs[j], "log", "-1", "--format=%s")
					seed.Run("--git-dir="+remote, "merge-base", "--is-ancestor", head, "results")
					if branch != "refs/heads/results" || subject != fmt.Sprintf("job %d", j) {
						t.Errorf("job %d: HEAD is %s on %s (%q), want its commit on refs/heads/results", j, head, branch, subject)
					}
				case res.code == 0 && n != 1:
					t.Errorf("job %d exited 0, its commit is not on the branch:\n%s%s", j, res.stdout, res.stderr)
				case res.code != 0 && (res.code != 1 || n != 0 || !gitRejection.MatchString(res.stderr)):
					t.Errorf("job %d: exit %d, landed %d times, want git's rejection and exit 1:\n%s", j, res.code, n, res.stderr)
				}
			}
			if want := map[bool]int{true: jobs, false: 1}[optIn]; landed != want {
				t.Errorf("%d commits landed, want %d:\n%s", landed, want, log)
			}
		})
	}
}

// toolLoopJob is a job of the shape of a tool with a push loop of its own
// (benchmark-action/github-action-benchmark's, over one gh-pages branch): it commits
// its file and tries to push up to 10 times, with a `git pull --rebase` after each
// push that failed.
const toolLoopJob = `set -e
echo "$JOB" > "job-$JOB.txt"
git add -A
git commit -q -m "job $JOB"
for try in 1 2 3 4 5 6 7 8 9 10; do
	if git push origin HEAD:gh-pages; then
		exit 0
	fi
	git pull -q --rebase origin gh-pages
done
exit 1
`

// TestShimPushToolLoop runs 8 jobs of toolLoopJob at once through the installed shim,
// as GitHub Actions runs them (GITHUB_ACTIONS=true: refretry logs in the github
// format), each in a clone made before any push, so that every job but the first to
// land loses a race. With REFRETRY_PUSH_REBASE=1 refretry rebases the lost pushes
// itself; without it a lost push fails as git's does and the job's loop pulls and
// pushes again. Either way every job lands once and exits 0, and no job's log has an
// ::error line: a failure the tool handles is git's, a warning (docs/logging.md). The
// log file shows the lost races (at least one failed attempt for each job but one),
// and so does a ::warning for each. At the default size each git and backend of
// backends runs one of the two (testutil.Cells); the stress size runs both on each.
func TestShimPushToolLoop(t *testing.T) {
	t.Parallel()
	for _, c := range pushRebaseCells(t) {
		t.Run(c.name(), func(t *testing.T) {
			t.Parallel()
			const jobs = 8
			seed := testutil.NewRepo(t, c.bc.git, c.bc.backend)
			remote := addOrigin(t, seed, c.bc.backend)
			seed.Run("push", "-q", "origin", "main:gh-pages")
			_, env := shimSetup(t, seed)
			logFile, _ := shimPushLog(t)
			env = append(env, "GITHUB_ACTIONS=true", "REFRETRY_LOG_FILE="+logFile)
			if c.optIn {
				env = append(env, "REFRETRY_PUSH_REBASE=1")
			}
			_, results := runClonedJobs(t, seed, remote, "gh-pages", env, jobs, toolLoopJob)
			log := seed.Run("--git-dir="+remote, "log", "--format=%s", "gh-pages")
			warnings := 0
			for j, res := range results {
				if n := strings.Count(log+"\n", fmt.Sprintf("job %d\n", j)); res.code != 0 || n != 1 {
					t.Errorf("job %d: exit %d, landed %d times\n%s%s", j, res.code, n, res.stdout, res.stderr)
				}
				if errorLine.MatchString(res.stdout + res.stderr) {
					t.Errorf("job %d succeeded, yet its log has an ::error line:\n%s%s", j, res.stdout, res.stderr)
				}
				warnings += len(refretryWarning.FindAllString(res.stderr, -1))
			}
			lost := failedShimAttempts(t, logFile)
			t.Logf("%d failed attempts recorded, %d ::warning lines", lost, warnings)
			if lost < jobs-1 || warnings < jobs-1 {
				t.Errorf("%d failed attempts in the log file and %d ::warning lines; want at least %d of each, a lost race for each job but the first to land",
					lost, warnings, jobs-1)
			}
		})
	}
}

// errorLine is a GitHub ::error workflow command; refretryWarning is refretry's
// ::warning.
var (
	errorLine       = regexp.MustCompile(`(?m)^::error`)
	refretryWarning = regexp.MustCompile(`(?m)^::warning title=refretry`)
)

// runClonedJobs clones branch of remote once per job, before any job runs, so that
// every job starts from the same commit, and then runs script in each clone at once
// (runJob), with env and JOB=<its number>.
func runClonedJobs(t *testing.T, seed *testutil.Repo, remote, branch string, env []string, jobs int, script string) (dirs []string, results []result) {
	t.Helper()
	dirs = make([]string, jobs)
	for j := range dirs {
		dirs[j] = filepath.Join(t.TempDir(), "job")
		seed.Run("clone", "-q", "-b", branch, "file://"+remote, dirs[j])
	}
	results = make([]result, jobs)
	var wg sync.WaitGroup
	for j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// A copy of env each: the goroutines must not share its spare capacity.
			results[j] = runJob(dirs[j], append(env[:len(env):len(env)], fmt.Sprintf("JOB=%d", j)), script)
		}()
	}
	wg.Wait()
	return dirs, results
}

// failedShimAttempts counts the failed attempts of pushes the shim ran, in the log
// file at path, and fails the test on a summary of one that is not at warning level
// or below: a failure through the shim is not refretry's error.
func failedShimAttempts(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	failed := 0
	for line := range strings.Lines(string(b)) {
		if !strings.Contains(line, `"command":"push","shim":true,`) {
			continue
		}
		if strings.Contains(line, `"msg":"attempt"`) && strings.Contains(line, `"class":`) {
			failed++
		}
		if strings.Contains(line, `"level":"ERROR"`) {
			t.Errorf("a record of the shim's push at error level: %s", line)
		}
	}
	return failed
}
