//go:build unix

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/refretry/refretry/internal/harness/testutil"
)

// exampleEnv is a repository's environment with git 2.55's directory first on PATH and
// REFRETRY naming refretry (binary), as the examples expect.
func exampleEnv(r *testutil.Repo) []string {
	env := slices.DeleteFunc(slices.Clone(r.Env), func(kv string) bool { return strings.HasPrefix(kv, "PATH=") })
	return append(env, "PATH="+filepath.Dir(r.Git.Path)+":"+os.Getenv("PATH"), "REFRETRY="+binary)
}

// example runs a script from examples/ in dir.
func example(t *testing.T, dir string, env []string, script string, args ...string) result {
	t.Helper()
	path, err := filepath.Abs(filepath.Join("examples", script))
	if err != nil {
		t.Fatal(err)
	}
	return runCmd(t, dir, env, "", path, args...)
}

// TestExampleMatrix runs the matrix example as CI would: jobs in checkouts of their
// own push their results to one reftable remote at once with examples/push-matrix.sh,
// then the final job collects them with examples/collect-results.sh. Both workflows
// (examples/github, examples/gitlab) run these steps.
func TestExampleMatrix(t *testing.T) {
	t.Parallel()
	g := testutil.NewGit(t)
	r := testutil.NewRepo(t, g, "files")
	remote := filepath.Join(t.TempDir(), "results.git")
	r.Run("init", "-q", "--bare", "-b", "main", "--ref-format=reftable", remote)
	r.Run("push", "-q", remote, "main")
	env := exampleEnv(r)
	jobs := testutil.Scale(t, 6, 12)
	var wg sync.WaitGroup
	results := make([]result, jobs)
	for i := range jobs {
		dir := filepath.Join(t.TempDir(), "job")
		r.Run("clone", "-q", remote, dir)
		report := filepath.Join(dir, "report.txt")
		if err := os.WriteFile(report, []byte(fmt.Sprintf("job %d passed\n", i)), 0o644); err != nil {
			t.Fatal(err)
		}
		jobEnv := append(slices.Clone(env), "RESULTS_REMOTE=origin", "RUN_ID=42", fmt.Sprintf("JOB_ID=job-%d", i))
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = example(t, dir, jobEnv, "push-matrix.sh", "report.txt")
		}()
	}
	wg.Wait()
	for i, res := range results {
		if res.code != 0 {
			t.Errorf("job %d: %+v", i, res)
		}
	}
	collector := filepath.Join(t.TempDir(), "collect")
	r.Run("clone", "-q", remote, collector)
	cenv := append(slices.Clone(env), "RESULTS_REMOTE=origin", "RUN_ID=42", fmt.Sprintf("EXPECTED=%d", jobs))
	res := example(t, collector, cenv, "collect-results.sh")
	if res.code != 0 {
		t.Fatalf("collect: %+v", res)
	}
	for i := range jobs {
		if !strings.Contains(res.stdout, fmt.Sprintf("== job-%d (", i)) || !strings.Contains(res.stdout, fmt.Sprintf("job %d passed\n", i)) {
			t.Errorf("collect output lacks job %d:\n%s", i, res.stdout)
		}
	}
	if !strings.HasSuffix(res.stdout, fmt.Sprintf("%d results for run 42\n", jobs)) {
		t.Errorf("collect output:\n%s", res.stdout)
	}
	// A retried job: with the same report it succeeds (the same commit, already there);
	// with another report it fails, and the first attempt's result stays.
	for _, tt := range []struct {
		report string
		ok     bool
	}{{"job 0 passed\n", true}, {"job 0 failed\n", false}} {
		dir := filepath.Join(t.TempDir(), "retry")
		r.Run("clone", "-q", remote, dir)
		if err := os.WriteFile(filepath.Join(dir, "report.txt"), []byte(tt.report), 0o644); err != nil {
			t.Fatal(err)
		}
		// Later than the first attempt, as a retry is.
		jobEnv := append(slices.Clone(env), "RESULTS_REMOTE=origin", "RUN_ID=42", "JOB_ID=job-0",
			"GIT_AUTHOR_DATE=1800000000 +0000", "GIT_COMMITTER_DATE=1800000000 +0000")
		if res := example(t, dir, jobEnv, "push-matrix.sh", "report.txt"); (res.code == 0) != tt.ok {
			t.Errorf("job 0 retried with %q: %+v", tt.report, res)
		}
	}
	if out := r.Run("--git-dir", remote, "show", "refs/ci/42/job-0:report.txt"); out != "job 0 passed" {
		t.Errorf("job 0's result after the retries: %q", out)
	}
	// A missing job fails the collection.
	cenv = append(slices.Clone(cenv), fmt.Sprintf("EXPECTED=%d", jobs+1))
	if res := example(t, collector, cenv, "collect-results.sh"); res.code == 0 || !strings.Contains(res.stderr, fmt.Sprintf("expected %d results, found %d", jobs+1, jobs)) {
		t.Errorf("collect with a job missing: %+v", res)
	}
}

// TestExampleRelease runs the release script: one transaction for the tag and the
// branch; a conflict fails at once with git's message, contention is waited out.
func TestExampleRelease(t *testing.T) {
	t.Parallel()
	r := testutil.NewRepo(t, testutil.NewGit(t), "reftable")
	env := exampleEnv(r)
	if res := example(t, r.Dir, env, "release.sh", "1.0"); res.code != 0 || !strings.HasPrefix(res.stdout, "released v1.0 at "+r.Commit) {
		t.Fatalf("release 1.0: %+v", res)
	}
	refs := r.Refs("refs/")
	if refs["refs/tags/v1.0"] != r.Commit || refs["refs/heads/release"] != r.Commit {
		t.Fatalf("refs after the release: %v", refs)
	}
	// The same version again: the tag exists, nothing changes, git's exit code.
	next := r.NewCommit("next")
	res := example(t, r.Dir, env, "release.sh", "1.0", next)
	if res.code != 128 || !strings.Contains(res.stderr, "refs/tags/v1.0") || strings.Contains(res.stderr, "refretry: attempt") {
		t.Errorf("releasing 1.0 twice: %+v", res)
	}
	if got := r.Refs("refs/heads/release")["refs/heads/release"]; got != r.Commit {
		t.Errorf("the failed release moved the branch to %s", got)
	}
	// Releases racing each other: each succeeds or loses the branch to another (a
	// conflict, exit 128), never on a lock.
	const racers = 8
	var wg sync.WaitGroup
	results := make([]result, racers)
	for i := range racers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = example(t, r.Dir, env, "release.sh", fmt.Sprintf("2.%d", i), next)
		}()
	}
	wg.Wait()
	wins := 0
	for i, res := range results {
		switch {
		case res.code == 0:
			wins++
			if r.Refs("refs/tags/")[fmt.Sprintf("refs/tags/v2.%d", i)] != next {
				t.Errorf("release 2.%d succeeded without its tag", i)
			}
		case res.code == 128 && !strings.Contains(res.stderr, "cannot lock references"):
		default:
			t.Errorf("release 2.%d: %+v", i, res)
		}
	}
	if wins == 0 {
		t.Errorf("no racing release succeeded")
	}
}

// TestExampleShim runs an unchanged tool (a shell loop of concurrent git update-ref
// calls on reftable) under examples/shim.sh: its git is the shim, and every update
// lands.
func TestExampleShim(t *testing.T) {
	t.Parallel()
	r := testutil.NewRepo(t, testutil.NewGit(t), "reftable")
	env := exampleEnv(r)
	const tool = `
		command -v git
		pids=""
		for i in $(seq 1 20); do git update-ref "refs/heads/tool/$i" HEAD & pids="$pids $!"; done
		fail=0
		for p in $pids; do wait "$p" || fail=1; done
		git rev-parse --abbrev-ref HEAD
		exit "$fail"`
	res := example(t, r.Dir, env, "shim.sh", "bash", "-c", tool)
	if res.code != 0 {
		t.Fatalf("tool under the shim: %+v", res)
	}
	lines := strings.Split(strings.TrimSpace(res.stdout), "\n")
	if len(lines) != 2 || filepath.Base(lines[0]) != "git" || lines[0] == r.Git.Path || lines[1] != "main" {
		t.Errorf("tool output %q: want the shim as git, then main", lines)
	}
	if n := len(r.Refs("refs/heads/tool/")); n != 20 {
		t.Errorf("%d refs written, want 20", n)
	}
	if _, err := os.Stat(filepath.Dir(lines[0])); !os.IsNotExist(err) {
		t.Errorf("the shim directory was left behind: %v", err)
	}
}

// TestExampleLibrary builds examples/library and runs it.
func TestExampleLibrary(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "library")
	build := exec.Command("go", "build", "-o", bin, "./examples/library")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building examples/library: %v\n%s", err, out)
	}
	r := testutil.NewRepo(t, testutil.NewGit(t), "reftable")
	env := exampleEnv(r)
	args := []string{"-git", r.Git.Path, "-C", r.Dir, "refs/ci/1/a=" + r.Commit, "refs/ci/1/b=" + r.Commit}
	if res := runCmd(t, t.TempDir(), env, "", bin, args...); res.code != 0 || res.stdout != "recorded 2 refs\n" {
		t.Fatalf("library: %+v", res)
	}
	if n := len(r.Refs("refs/ci/1/")); n != 2 {
		t.Errorf("%d refs, want 2", n)
	}
	res := runCmd(t, t.TempDir(), env, "", bin, args...)
	if res.code != 128 || !strings.Contains(res.stderr, "library: conflict, not retried") {
		t.Errorf("library, refs existing: %+v", res)
	}
}

// TestExampleWorkflows checks what can be checked of the workflows without a CI: they
// parse, and every example script they run exists and is executable. actionlint checks
// the GitHub workflow in scripts/test.sh.
func TestExampleWorkflows(t *testing.T) {
	t.Parallel()
	for _, file := range []string{"examples/github/matrix.yml", "examples/gitlab/.gitlab-ci.yml"} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		if err := yaml.Unmarshal(b, &doc); err != nil {
			t.Errorf("%s: %v", file, err)
			continue
		}
		for _, word := range strings.Fields(string(b)) {
			word = strings.Trim(word, `"'`)
			if !strings.HasPrefix(word, "examples/") || !strings.HasSuffix(word, ".sh") {
				continue
			}
			fi, err := os.Stat(word)
			if err != nil || fi.Mode().Perm()&0o111 == 0 {
				t.Errorf("%s runs %s: %v (mode %v)", file, word, err, fi.Mode())
			}
		}
	}
	b, err := os.ReadFile("examples/gitlab/.gitlab-ci.yml")
	if err != nil {
		t.Fatal(err)
	}
	var gl map[string]yaml.Node
	if err := yaml.Unmarshal(b, &gl); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"test", "collect"} {
		var job struct {
			Stage  string   `yaml:"stage"`
			Script []string `yaml:"script"`
		}
		node := gl[name]
		if err := node.Decode(&job); err != nil || job.Stage != name || len(job.Script) == 0 {
			t.Errorf("GitLab job %s: %+v, %v", name, job, err)
		}
	}
}

// TestExampleGitHubInputs holds every use of the Action in the GitHub examples to
// action.yml, which actionlint cannot do for a remote action (refretry/refretry@v1.2.3):
// each input it passes is declared, and a true-or-false input (the default is true or
// false) gets one of the two. In the fan-in example, the job that lands needs the jobs
// that stage without waiting.
func TestExampleGitHubInputs(t *testing.T) {
	t.Parallel()
	a := loadAction(t)
	files, err := filepath.Glob("examples/github/*.yml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no GitHub examples: %v", err)
	}
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var wf struct {
			Jobs map[string]struct {
				Needs any `yaml:"needs"`
				Steps []struct {
					Uses string            `yaml:"uses"`
					With map[string]string `yaml:"with"`
				} `yaml:"steps"`
			} `yaml:"jobs"`
		}
		if err := yaml.Unmarshal(b, &wf); err != nil {
			t.Errorf("%s: %v", file, err)
			continue
		}
		uses := map[string][]string{} // job: the inputs it gives the Action
		for name, job := range wf.Jobs {
			for _, step := range job.Steps {
				if !strings.HasPrefix(step.Uses, "refretry/refretry@") {
					continue
				}
				for input, v := range step.With {
					in, ok := a.Inputs[input]
					switch {
					case !ok:
						t.Errorf("%s, job %s: input %s is not in action.yml", file, name, input)
					case (in.Default == "true" || in.Default == "false") && v != "true" && v != "false" && !strings.Contains(v, "${{"):
						t.Errorf("%s, job %s: %s: %q, want true or false", file, name, input, v)
					}
					uses[name] = append(uses[name], input+"="+v)
				}
			}
		}
		if filepath.Base(file) == "gather-fan-in.yml" {
			checkFanIn(t, file, uses, func(job string) any { return wf.Jobs[job].Needs })
		}
	}
}

// checkFanIn checks a fan-in workflow: some job stages with gather-no-wait, and the
// job with gather-land needs each of those.
func checkFanIn(t *testing.T, file string, uses map[string][]string, needs func(job string) any) {
	t.Helper()
	var stagers, landers []string
	for job, inputs := range uses {
		if slices.Contains(inputs, "gather-no-wait=true") {
			stagers = append(stagers, job)
		}
		if slices.ContainsFunc(inputs, func(s string) bool { return strings.HasPrefix(s, "gather-land=") }) {
			landers = append(landers, job)
		}
	}
	if len(stagers) == 0 || len(landers) != 1 {
		t.Fatalf("%s: jobs staging without waiting %q, landing %q; want some, and one", file, stagers, landers)
	}
	var need []string // needs: is a job's name or a list of them
	switch n := needs(landers[0]).(type) {
	case string:
		need = []string{n}
	case []any:
		for _, v := range n {
			need = append(need, fmt.Sprint(v))
		}
	}
	for _, s := range stagers {
		if !slices.Contains(need, s) {
			t.Errorf("%s: job %s lands, but needs %q, not the staging job %s", file, landers[0], need, s)
		}
	}
}
