package forge_test

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/refretry/refretry/forge"
	"github.com/refretry/refretry/internal/harness/forgeapi"
	"github.com/refretry/refretry/internal/harness/testutil"
	"github.com/refretry/refretry/retry"
	"github.com/refretry/refretry/settings"
)

// job is a CI job's work tree: a depth-1 clone of the forge's main, detached, with
// a commit of its own.
type job struct {
	t   testing.TB
	g   testutil.Git
	dir string
	env []string
}

// newJob clones url's main (depth 1, detached, as a pull_request checkout) and
// commits files (a content starting with "#!" is an executable) and symbolic links
// (path to target) on it.
func newJob(t testing.TB, g testutil.Git, url string, files, links map[string]string) *job {
	t.Helper()
	root := t.TempDir()
	j := &job{t: t, g: g, dir: filepath.Join(root, "w"), env: append(testutil.NoMaintenanceEnv(t, root), "GIT_TERMINAL_PROMPT=0")}
	j.gitIn(root, "clone", "-q", "--depth=1", "--branch=main", url, j.dir)
	j.git("checkout", "-q", "--detach")
	j.git("config", "user.name", "Job")
	j.git("config", "user.email", "job@example.invalid")
	j.commit("result", files, links)
	return j
}

// commit writes files and links and commits them with msg.
func (j *job) commit(msg string, files, links map[string]string) {
	j.t.Helper()
	testutil.WriteFiles(j.t, j.dir, files, links)
	j.git("add", "-A")
	j.git("commit", "-q", "-m", msg)
}

func (j *job) git(args ...string) string { j.t.Helper(); return j.gitIn(j.dir, args...) }

func (j *job) gitIn(dir string, args ...string) string {
	j.t.Helper()
	cmd := exec.Command(j.g.Path, args...)
	cmd.Dir, cmd.Env = dir, j.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		j.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// runner is a Runner for the job, on api, with a quick schedule and a generous
// budget.
func (j *job) runner(api forge.API) *forge.Runner {
	return &forge.Runner{
		Config: settings.Config{
			Git:  j.g.Path,
			Dirs: []string{j.dir},
			Env:  j.env,
			Settings: func() (settings.Settings, error) {
				return settings.Settings{Policy: retry.Policy{Timeout: 3 * time.Minute, InitialDelay: 5 * time.Millisecond,
					MaxDelay: 200 * time.Millisecond, Multiplier: 2, Jitter: 0.5}}, nil
			},
		},
		API: api,
	}
}

// outcome is one Run's.
type outcome struct {
	res      forge.Result
	err      error
	stderr   string
	attempts []retry.Attempt
}

// land runs the job's push --api of HEAD to main through api.
func (j *job) land(api forge.API, args ...string) outcome {
	j.t.Helper()
	return j.landWith(j.runner(api), args...)
}

// landWith runs the job's push --api of HEAD to main (or args) with r, keeping every
// attempt it reports.
func (j *job) landWith(r *forge.Runner, args ...string) outcome {
	j.t.Helper()
	var o outcome
	var stderr bytes.Buffer
	if len(args) == 0 {
		args = []string{"origin", "HEAD:main"}
	}
	r.OnAttempt = func(a retry.Attempt) { o.attempts = append(o.attempts, a) }
	o.res, o.err = r.Run(context.Background(), args, nil, nil, &stderr)
	o.stderr = stderr.String()
	return o
}

// contains reports whether one line of text has every one of parts.
func contains(text string, parts ...string) bool {
	for _, line := range strings.Split(text, "\n") {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(line, p)
		}
		if all {
			return true
		}
	}
	return false
}

// verify checks oid's signature with git verify-commit in j, trusting s's key.
func verify(t testing.TB, j *job, s interface{ Signer() testutil.Signer }, oid string) {
	t.Helper()
	cmd := exec.Command(j.g.Path, append(s.Signer().ConfigArgs(), "verify-commit", oid)...)
	cmd.Dir, cmd.Env = j.dir, append(j.env[:len(j.env):len(j.env)], s.Signer().Env()...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("git verify-commit %s: %v\n%s", oid, err, out)
	}
}

// concurrently runs f for every job at once, released together, and returns the
// outcomes in order.
func concurrently(jobs []*job, f func(*job) outcome) []outcome {
	return testutil.Together(len(jobs), func(i int) outcome { return f(jobs[i]) })
}

// checkBranch checks that s's main has n commits over its first, each made by the
// forge and verifying with its key, and that no staging ref is left.
func checkBranch(t testing.TB, j *job, s *forgeapi.Server, n int) {
	t.Helper()
	commits := strings.Fields(s.Git("rev-list", "main", "^main~"+fmt.Sprint(n)))
	if len(commits) != n || s.Git("rev-list", "--count", "main") != fmt.Sprint(n+1) {
		t.Errorf("main has %s commits, want %d over the first", s.Git("rev-list", "--count", "main"), n)
	}
	j.git("fetch", "-q", "origin", "main")
	for _, c := range commits {
		if who := s.Git("log", "-1", "--format=%cn", c); who != "GitHub" {
			t.Errorf("%s: committer %q, not the forge", c, who)
		}
		verify(t, j, s, c)
	}
	if refs := s.Git("for-each-ref", "refs/refretry/"); refs != "" {
		t.Errorf("refs left on the remote:\n%s", refs)
	}
}
