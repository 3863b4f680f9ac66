//go:build unix

package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/refretry/refretry/internal/harness/releasetest"
	"github.com/refretry/refretry/internal/harness/testutil"
)

// actionFile is the part of action.yml a composite action's runner reads.
type actionFile struct {
	Inputs map[string]struct {
		Default string `yaml:"default"`
	} `yaml:"inputs"`
	Outputs map[string]struct {
		Value string `yaml:"value"`
	} `yaml:"outputs"`
	Runs struct {
		Using string `yaml:"using"`
		Steps []struct {
			ID               string            `yaml:"id"`
			If               string            `yaml:"if"`
			Uses             string            `yaml:"uses"`
			With             map[string]string `yaml:"with"`
			Shell            string            `yaml:"shell"`
			Run              string            `yaml:"run"`
			Env              map[string]string `yaml:"env"`
			WorkingDirectory string            `yaml:"working-directory"`
		} `yaml:"steps"`
	} `yaml:"runs"`
}

func loadAction(t *testing.T) actionFile {
	t.Helper()
	b, err := os.ReadFile("action.yml")
	if err != nil {
		t.Fatal(err)
	}
	var a actionFile
	if err := yaml.Unmarshal(b, &a); err != nil {
		t.Fatal(err)
	}
	if a.Runs.Using != "composite" {
		t.Fatalf("runs.using = %q, want composite", a.Runs.Using)
	}
	return a
}

// TestActionInputsOnlyThroughEnv checks the rule that keeps inputs out of shell code: no
// run: script holds an expression.
func TestActionInputsOnlyThroughEnv(t *testing.T) {
	t.Parallel()
	a := loadAction(t)
	for _, s := range a.Runs.Steps {
		if strings.Contains(s.Run, "${{") {
			t.Errorf("step %s interpolates an expression into its script", s.ID)
		}
		switch {
		case s.Uses != "":
			// A runner resolves every action a composite names before it runs, under a
			// false if: too: one the runner cannot fetch (offline, GHES without GitHub
			// Connect) fails every use of this one.
			t.Errorf("step %s uses %s: the Action must name no other action", s.ID, s.Uses)
		case s.Shell != "bash":
			t.Errorf("step %s: shell %q, want bash", s.ID, s.Shell)
		}
	}
	for _, name := range []string{"args", "stdin", "push", "gather", "gather-no-wait", "gather-land", "gather-key", "api", "forge", "api-token",
		"timeout", "max-attempts", "install-shim", "push-rebase", "working-directory", "releases-url"} {
		if _, ok := a.Inputs[name]; !ok {
			t.Errorf("input %s is missing", name)
		}
	}
	for _, name := range []string{"operation-id", "result", "attempts", "updated-refs"} {
		if _, ok := a.Outputs[name]; !ok {
			t.Errorf("output %s is missing", name)
		}
	}
}

// actionRun is one use of the action in a job, run as GitHub's runner runs a composite
// action: each step's script in bash, with expressions in env:, working-directory and
// outputs substituted, fresh GITHUB_OUTPUT and GITHUB_STEP_SUMMARY files per step, and
// the directories added to GITHUB_PATH put first on PATH for later steps. A step that
// uses another action (the build cache) is not run: it is recorded, with its inputs.
type actionRun struct {
	outputs   map[string]string // the action's outputs
	steps     map[string]map[string]string
	uses      []usedAction             // the steps that use another action and whose if: held
	took      map[string]time.Duration // by step id
	summary   string                   // every step's summary, concatenated
	path      []string                 // GITHUB_PATH lines, in order
	log       string                   // every step's output, concatenated
	failedAt  string                   // id of the step that failed, if one did
	stderr    string                   // the failing step's output
	workspace string
}

// usedAction is a step that uses another action.
type usedAction struct {
	uses string
	with map[string]string
}

type actionEnv struct {
	workspace  string   // GITHUB_WORKSPACE: the repository
	temp       string   // RUNNER_TEMP
	toolCache  string   // RUNNER_TOOL_CACHE
	actionPath string   // GITHUB_ACTION_PATH; default: this checkout
	pathDirs   []string // PATH before the action
	env        []string // the rest of the job's environment
	token      string   // the job's token, github.token
}

var (
	expr = regexp.MustCompile(`\$\{\{\s*(.*?)\s*\}\}`)
	// cond is the one form of if: this test's runner evaluates.
	cond = regexp.MustCompile(`^steps\.([\w-]+)\.outputs\.([\w-]+) (==|!=) '([^']*)'$`)
)

func runAction(t *testing.T, a actionFile, je actionEnv, inputs map[string]string) actionRun {
	t.Helper()
	actionPath := je.actionPath
	if actionPath == "" {
		p, err := filepath.Abs(".")
		if err != nil {
			t.Fatal(err)
		}
		actionPath = p
	}
	for name := range inputs {
		if _, ok := a.Inputs[name]; !ok {
			t.Fatalf("no input %s", name)
		}
	}
	res := actionRun{steps: map[string]map[string]string{}, outputs: map[string]string{},
		took: map[string]time.Duration{}, workspace: je.workspace}
	githubPath := filepath.Join(je.temp, "github_path")
	var eval func(string) string
	eval = func(s string) string {
		return expr.ReplaceAllStringFunc(s, func(m string) string {
			e := strings.TrimSpace(expr.FindStringSubmatch(m)[1])
			switch parts := strings.Split(e, "."); {
			case len(parts) == 2 && parts[0] == "inputs":
				if v, ok := inputs[parts[1]]; ok {
					return v
				}
				return eval(a.Inputs[parts[1]].Default) // a default may be an expression: github.token
			case len(parts) == 4 && parts[0] == "steps" && parts[2] == "outputs":
				return res.steps[parts[1]][parts[3]]
			case e == "github.token":
				return je.token
			}
			t.Fatalf("expression %q is beyond this test's runner", e)
			return ""
		})
	}
	for i, s := range a.Runs.Steps {
		if s.If != "" {
			m := cond.FindStringSubmatch(s.If)
			if m == nil {
				t.Fatalf("if: %q is beyond this test's runner", s.If)
			}
			if (res.steps[m[1]][m[2]] == m[4]) != (m[3] == "==") {
				continue
			}
		}
		if s.Uses != "" {
			with := map[string]string{}
			for k, v := range s.With {
				with[k] = eval(v)
			}
			res.uses = append(res.uses, usedAction{s.Uses, with})
			continue
		}
		dir := filepath.Join(je.temp, fmt.Sprintf("step%d", i))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		script := filepath.Join(dir, "script.sh")
		if err := os.WriteFile(script, []byte(s.Run), 0o644); err != nil {
			t.Fatal(err)
		}
		out, summary := filepath.Join(dir, "output"), filepath.Join(dir, "summary")
		for _, f := range []string{out, summary, filepath.Join(dir, "env")} {
			if err := os.WriteFile(f, nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if f, err := os.OpenFile(githubPath, os.O_CREATE|os.O_WRONLY, 0o644); err != nil {
			t.Fatal(err)
		} else {
			f.Close()
		}
		pathDirs := append(slices.Clone(res.path), je.pathDirs...)
		slices.Reverse(pathDirs[:len(res.path)]) // the last added comes first
		env := append(slices.Clone(je.env),
			"PATH="+strings.Join(pathDirs, ":"),
			"GITHUB_ACTIONS=true", "CI=true", "RUNNER_OS=Linux", "RUNNER_ARCH=X64",
			"RUNNER_TEMP="+je.temp, "RUNNER_TOOL_CACHE="+je.toolCache,
			"GITHUB_WORKSPACE="+je.workspace, "GITHUB_ACTION_PATH="+actionPath,
			"GITHUB_OUTPUT="+out, "GITHUB_STEP_SUMMARY="+summary, "GITHUB_PATH="+githubPath,
			"GITHUB_ENV="+filepath.Join(dir, "env"))
		for k, v := range s.Env {
			env = append(env, k+"="+eval(v))
		}
		cwd := je.workspace
		if s.WorkingDirectory != "" {
			cwd = filepath.Join(je.workspace, eval(s.WorkingDirectory))
		}
		// What the runner runs for shell: bash.
		cmd := exec.Command("bash", "--noprofile", "--norc", "-eo", "pipefail", script)
		cmd.Dir, cmd.Env = cwd, env
		start := time.Now()
		combined, err := cmd.CombinedOutput()
		res.took[s.ID] = time.Since(start)
		res.log += string(combined)
		res.steps[s.ID] = readOutputs(t, out)
		b, _ := os.ReadFile(summary)
		res.summary += string(b)
		res.path = readLines(t, githubPath)
		if err != nil {
			res.failedAt, res.stderr = s.ID, string(combined)
			break
		}
	}
	for name, o := range a.Outputs {
		res.outputs[name] = eval(o.Value)
	}
	return res
}

// readOutputs reads a GITHUB_OUTPUT file: name=value lines and name<<DELIMITER blocks.
func readOutputs(t *testing.T, path string) map[string]string {
	t.Helper()
	lines := readLines(t, path)
	outs := map[string]string{}
	for i := 0; i < len(lines); i++ {
		if name, delim, ok := strings.Cut(lines[i], "<<"); ok {
			var value []string
			for i++; i < len(lines) && lines[i] != delim; i++ {
				value = append(value, lines[i])
			}
			if i == len(lines) {
				t.Fatalf("%s: unterminated value for %s", path, name)
			}
			outs[name] = strings.Join(value, "\n")
			continue
		}
		if name, value, ok := strings.Cut(lines[i], "="); ok {
			outs[name] = value
		}
	}
	return outs
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return lines
}

// newActionEnv is a job's workspace holding a repository made by git 2.55, with a bare
// remote beside it, and a PATH with git, bash and (withRefretry) refretry, or Go and no
// refretry.
func newActionEnv(t *testing.T, withRefretry bool) (actionEnv, *testutil.Repo) {
	t.Helper()
	g := testutil.NewGit(t)
	r := testutil.NewRepo(t, g, "reftable")
	remote := filepath.Join(t.TempDir(), "remote.git")
	r.Run("init", "-q", "--bare", remote)
	r.Run("remote", "add", "origin", remote)
	tools := t.TempDir()
	link := func(name, target string) {
		if err := os.Symlink(target, filepath.Join(tools, name)); err != nil {
			t.Fatal(err)
		}
	}
	link("git", g.Path)
	dirs := []string{tools}
	if withRefretry {
		link("refretry", binary)
	} else {
		goBin, err := exec.LookPath("go")
		if err != nil {
			t.Fatal(err)
		}
		link("go", goBin)
	}
	for _, p := range []string{"bash", "mkdir", "cat", "touch", "env"} {
		if full, err := exec.LookPath(p); err == nil {
			dirs = append(dirs, filepath.Dir(full))
		}
	}
	env := slices.DeleteFunc(slices.Clone(r.Env), func(kv string) bool { return strings.HasPrefix(kv, "PATH=") })
	// The build uses this machine's Go caches, and never the network.
	for _, k := range []string{"GOCACHE", "GOMODCACHE"} {
		out, err := exec.Command("go", "env", k).Output()
		if err != nil {
			t.Fatal(err)
		}
		env = append(env, k+"="+strings.TrimSpace(string(out)))
	}
	env = append(env, "GOPROXY=off", "GOFLAGS=-mod=readonly")
	// The runner's tool cache, where the action keeps Go's build cache for a source
	// build: here it is this machine's, so that the build is as warm as the tests'.
	toolCache := t.TempDir()
	out, err := exec.Command("go", "env", "GOCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(strings.TrimSpace(string(out)), filepath.Join(toolCache, "refretry-go-build")); err != nil {
		t.Fatal(err)
	}
	return actionEnv{workspace: r.Dir, temp: t.TempDir(), toolCache: toolCache, pathDirs: slices.Compact(dirs), env: env}, r
}

// TestActionBuildAndShim runs the action where refretry is not installed: it builds it
// from its own source with Go, runs the update, installs the shim, and a later step's
// git update-ref goes through the shim.
func TestActionBuildAndShim(t *testing.T) {
	t.Parallel()
	a := loadAction(t)
	je, r := newActionEnv(t, false)
	res := runAction(t, a, je, map[string]string{
		"args": "refs/ci/run-1/job-a " + r.Commit, "install-shim": "true", "timeout": "30s", "max-attempts": "5",
	})
	if res.failedAt != "" {
		t.Fatalf("step %s failed:\n%s", res.failedAt, res.stderr)
	}
	checkSuccess(t, res, 1, "refs/ci/run-1/job-a")
	if got := r.Refs("refs/ci/")["refs/ci/run-1/job-a"]; got != r.Commit {
		t.Errorf("refs/ci/run-1/job-a = %q", got)
	}
	// Go's build cache for the build: in the runner's tool cache, which a self-hosted
	// runner keeps; no other action is named to keep it.
	goCache := filepath.Join(je.toolCache, "refretry-go-build")
	if len(res.uses) != 0 {
		t.Fatalf("steps using other actions: %+v", res.uses)
	}
	if !strings.Contains(res.log, "build cache "+goCache) {
		t.Errorf("the build did not use %s:\n%s", goCache, res.log)
	}
	built := filepath.Join(je.temp, "refretry-action")
	shimDir := filepath.Join(je.temp, "refretry-shim")
	if want := []string{built, shimDir}; !slices.Equal(res.path, want) {
		t.Fatalf("GITHUB_PATH = %q, want %q", res.path, want)
	}
	// A later step of the job: PATH has the GITHUB_PATH lines first, the last one first.
	later := exec.Command("bash", "-c", `command -v git; git update-ref refs/ci/later "$1"`, "bash", r.Commit)
	later.Dir = r.Dir
	later.Env = append(slices.Clone(je.env), "GITHUB_ACTIONS=true",
		"PATH="+strings.Join(append([]string{shimDir, built}, je.pathDirs...), ":"))
	out, err := later.CombinedOutput()
	if err != nil {
		t.Fatalf("a later step's git update-ref: %v\n%s", err, out)
	}
	if first := strings.SplitN(string(out), "\n", 2)[0]; first != filepath.Join(shimDir, "git") {
		t.Errorf("later steps run %s as git, want the shim", first)
	}
	if !strings.Contains(string(out), "refretry: update-ref, operation") {
		t.Errorf("the later update-ref did not go through refretry:\n%s", out)
	}
}

func checkSuccess(t *testing.T, res actionRun, ops int, refs ...string) {
	t.Helper()
	if !regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}$`).MatchString(res.outputs["operation-id"]) {
		t.Errorf("operation-id = %q", res.outputs["operation-id"])
	}
	if res.outputs["result"] != "success" || res.outputs["attempts"] != "1" {
		t.Errorf("result %q after %q attempts", res.outputs["result"], res.outputs["attempts"])
	}
	if got := res.outputs["updated-refs"]; got != strings.Join(refs, "\n") {
		t.Errorf("updated-refs = %q, want %q", got, refs)
	}
	rows := 0
	for _, line := range strings.Split(res.summary, "\n") {
		if strings.HasPrefix(line, "| ") && !strings.HasPrefix(line, "| refretry operation |") {
			rows++
		}
	}
	if rows != ops { // one per refretry operation: none run twice, by the shim, say
		t.Errorf("step summary: %d rows, want %d:\n%s", rows, ops, res.summary)
	}
	if !strings.Contains(res.summary, "| refretry operation | result | attempts | elapsed | refs |") ||
		!strings.Contains(res.summary, markdownID(res.outputs["operation-id"])) {
		t.Errorf("step summary has no row for the operation:\n%s", res.summary)
	}
}

// markdownID is an operation id as the step summary escapes it.
func markdownID(id string) string { return strings.ReplaceAll(id, "-", `\-`) }

// TestActionInputs runs the action with refretry already on PATH: no build.
func TestActionInputs(t *testing.T) {
	t.Parallel()
	a := loadAction(t)

	t.Run("stdin", func(t *testing.T) {
		t.Parallel()
		je, r := newActionEnv(t, true)
		res := runAction(t, a, je, map[string]string{
			"stdin": "create refs/ci/s/1 " + r.Commit + "\ncreate refs/ci/s/2 " + r.Commit + "\n",
			"args":  "-m\nrecorded by CI, run 1",
		})
		if res.failedAt != "" {
			t.Fatalf("step %s failed:\n%s", res.failedAt, res.stderr)
		}
		checkSuccess(t, res, 1, "refs/ci/s/1", "refs/ci/s/2")
		if len(res.path) != 0 || len(res.uses) != 0 {
			t.Errorf("GITHUB_PATH = %q, other actions %+v, without a build or a shim", res.path, res.uses)
		}
	})

	t.Run("push and working-directory", func(t *testing.T) {
		t.Parallel()
		je, r := newActionEnv(t, true)
		sub := filepath.Join(je.workspace, "sub")
		if err := os.Mkdir(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		res := runAction(t, a, je, map[string]string{
			"args": "refs/ci/p/1 HEAD", "push": "origin refs/ci/p/1:refs/ci/p/1", "working-directory": "sub",
		})
		if res.failedAt != "" {
			t.Fatalf("step %s failed:\n%s", res.failedAt, res.stderr)
		}
		checkSuccess(t, res, 2, "refs/ci/p/1") // the outputs are the push's, the last operation
		if out := r.Run("ls-remote", "origin", "refs/ci/p/1"); !strings.HasPrefix(out, r.Commit) {
			t.Errorf("the remote has %q", out)
		}
	})

	t.Run("gather", func(t *testing.T) {
		t.Parallel()
		je, r := newActionEnv(t, true)
		r.Run("push", "-q", "origin", "HEAD:refs/heads/results")
		mine := r.NewCommit("result of this job")
		// Without gather-key, the step fails before anything is staged, saying what to set.
		res := runAction(t, a, je, map[string]string{"gather": "results"})
		if want := "::error title=refretry::gather needs gather-key: set it to a secret the matrix jobs share " +
			"(e.g. secrets.REFRETRY_GATHER_KEY), or to none to trust everyone who may push refs/refretry/* (docs/security.md)\n"; res.failedAt != "setup" || res.stderr != want {
			t.Errorf("without gather-key: failed at %q, said\n%s\nwant the setup step and\n%s", res.failedAt, res.stderr, want)
		}
		if left := r.Run("ls-remote", "origin", "refs/refretry/*"); left != "" {
			t.Errorf("staged without a key: %s", left)
		}
		res = runAction(t, a, je, map[string]string{"gather": "results", "gather-key": "action-test-gather-key-0123"})
		if res.failedAt != "" {
			t.Fatalf("step %s failed:\n%s", res.failedAt, res.stderr)
		}
		if strings.Contains(res.log, "no gather key") || strings.Contains(res.log, "action-test-gather-key") {
			t.Errorf("the keyed gather ran without its key, or showed it:\n%s", res.log)
		}
		r.Run("fetch", "-q", "origin", "results")
		if got := r.Run("log", "-1", "--format=%s%n%(trailers:key=Refretry-Gather,valueonly)", "FETCH_HEAD"); !strings.HasPrefix(got, "result of this job\n") {
			t.Errorf("results is at %q, want the job's commit (%s) gathered", got, mine)
		}
		if left := r.Run("ls-remote", "origin", "refs/refretry/*"); left != "" {
			t.Errorf("left on the remote: %s", left)
		}
	})

	t.Run("failure", func(t *testing.T) {
		t.Parallel()
		je, r := newActionEnv(t, true)
		res := runAction(t, a, je, map[string]string{"args": "refs/heads/main " + r.Commit + " " + strings.Repeat("1", len(r.Commit))})
		if res.failedAt != "run" {
			t.Fatalf("failed at %q, want the run step:\n%s", res.failedAt, res.stderr)
		}
		if res.outputs["result"] != "failed" || res.outputs["updated-refs"] != "" {
			t.Errorf("outputs %v", res.outputs)
		}
		if !strings.Contains(res.stderr, "::error") {
			t.Errorf("no error annotation:\n%s", res.stderr)
		}
	})

	t.Run("bad install-shim", func(t *testing.T) {
		t.Parallel()
		je, _ := newActionEnv(t, true)
		res := runAction(t, a, je, map[string]string{"install-shim": "yes"})
		if res.failedAt != "setup" || !strings.Contains(res.stderr, "install-shim must be true or false") {
			t.Errorf("failed at %q:\n%s", res.failedAt, res.stderr)
		}
	})

	t.Run("push-rebase", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct {
			inputs map[string]string
			error  string // the setup step's annotation; "" when the Action succeeds
		}{
			{map[string]string{"push-rebase": "yes", "install-shim": "true"}, "::error title=refretry::push-rebase must be true or false"},
			{map[string]string{"push-rebase": "true"}, "::error title=refretry::push-rebase needs install-shim: true"},
			{map[string]string{"push-rebase": "true", "install-shim": "false"}, "::error title=refretry::push-rebase needs install-shim: true"},
			{map[string]string{"push-rebase": "true", "install-shim": "true"}, ""},
			{map[string]string{"push-rebase": "false", "install-shim": "true"}, ""},
		} {
			je, _ := newActionEnv(t, true)
			res := runAction(t, a, je, tc.inputs)
			if tc.error != "" {
				if res.failedAt != "setup" || !strings.Contains(res.stderr, tc.error) {
					t.Errorf("%v: failed at %q, want the setup step with %q:\n%s", tc.inputs, res.failedAt, tc.error, res.stderr)
				}
				continue
			}
			if res.failedAt != "" {
				t.Fatalf("%v: step %s failed:\n%s", tc.inputs, res.failedAt, res.stderr)
			}
			envFiles, _ := filepath.Glob(filepath.Join(je.temp, "step*", "env"))
			var env strings.Builder
			for _, f := range envFiles {
				b, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				env.Write(b)
			}
			if set := strings.Contains(env.String(), "REFRETRY_PUSH_REBASE=1\n"); set != (tc.inputs["push-rebase"] == "true") {
				t.Errorf("%v: GITHUB_ENV has REFRETRY_PUSH_REBASE=1: %v\n%s", tc.inputs, set, env.String())
			}
		}
	})
}

// TestActionGatherFanIn runs the fan-in as a workflow would: matrix jobs with
// gather-no-wait stage their commits and end at once, and a later job with gather-land
// lands them all; the key rules are gather's, and gather-no-wait takes true or false.
func TestActionGatherFanIn(t *testing.T) {
	t.Parallel()
	a := loadAction(t)
	const key = "action-test-gather-key-0123"
	je, r := newActionEnv(t, true)
	r.Run("push", "-q", "origin", "HEAD:refs/heads/results")
	// Two matrix jobs, one after the other in one checkout: each commits on the
	// branch's tip, stages, and ends without waiting.
	for _, job := range []string{"a", "b"} {
		r.Run("reset", "-q", "--hard", r.Commit)
		r.NewCommit("result of job " + job)
		res := runAction(t, a, je, map[string]string{"gather": "results", "gather-no-wait": "true", "gather-key": key})
		if res.failedAt != "" || res.outputs["result"] != "success" {
			t.Fatalf("job %s: failed at %q, result %q:\n%s", job, res.failedAt, res.outputs["result"], res.log)
		}
		// What the job updated is its staging ref, not the branch it did not wait for.
		if ref := res.outputs["updated-refs"]; r.Run("ls-remote", "origin", ref) == "" || !strings.HasPrefix(ref, "refs/refretry/gather/results/") {
			t.Errorf("job %s: updated-refs %q, want the ref its commit is staged as", job, ref)
		}
	}
	staged := strings.Split(r.Run("ls-remote", "origin", "refs/refretry/gather/results/*"), "\n")
	if tip := r.Run("ls-remote", "origin", "refs/heads/results"); len(staged) != 2 || !strings.HasPrefix(tip, r.Commit) {
		t.Fatalf("after the matrix jobs: staged %q, results at %q; want 2 staged and results where it was", staged, tip)
	}
	// The fan-in job: without a key it fails before landing anything.
	res := runAction(t, a, je, map[string]string{"gather-land": "results"})
	if want := "::error title=refretry::gather-land needs gather-key: set it to a secret the matrix jobs share"; res.failedAt != "setup" || !strings.HasPrefix(res.stderr, want) {
		t.Errorf("gather-land without gather-key: failed at %q, said\n%s\nwant the setup step and %q", res.failedAt, res.stderr, want)
	}
	if tip := r.Run("ls-remote", "origin", "refs/heads/results"); !strings.HasPrefix(tip, r.Commit) {
		t.Errorf("landed without a key: results at %s", tip)
	}
	res = runAction(t, a, je, map[string]string{"gather-land": "results", "gather-key": key})
	if res.failedAt != "" || res.outputs["result"] != "success" || res.outputs["updated-refs"] != "refs/heads/results" {
		t.Fatalf("gather-land: failed at %q, outputs %v:\n%s", res.failedAt, res.outputs, res.log)
	}
	if strings.Contains(res.log, "no gather key") || strings.Contains(res.log, key) {
		t.Errorf("the land ran without its key, or showed it:\n%s", res.log)
	}
	r.Run("fetch", "-q", "origin", "results")
	if got := r.Run("log", "--format=%s", r.Commit+"..FETCH_HEAD"); got != "result of job b\nresult of job a" {
		t.Errorf("results has %q on top of where it was, want both jobs' commits, in the order they staged", got)
	}
	if left := r.Run("ls-remote", "origin", "refs/refretry/*"); left != "" {
		t.Errorf("left on the remote: %s", left)
	}

	for _, tc := range []struct {
		inputs map[string]string
		error  string
	}{
		{map[string]string{"gather": "results", "gather-no-wait": "yes", "gather-key": key}, "::error title=refretry::gather-no-wait must be true or false\n"},
		{map[string]string{"gather": "results", "gather-no-wait": "", "gather-key": key}, "::error title=refretry::gather-no-wait must be true or false\n"},
		{map[string]string{"gather-no-wait": "true", "gather-key": key}, "::error title=refretry::gather-no-wait needs gather: the branch to stage the job's commit for\n"},
	} {
		if res := runAction(t, a, je, tc.inputs); res.failedAt != "setup" || res.stderr != tc.error {
			t.Errorf("%v: failed at %q, said\n%s\nwant the setup step and\n%s", tc.inputs, res.failedAt, res.stderr, tc.error)
		}
	}
}

// TestActionInjection gives every input text that a shell would run if it were
// interpolated into a script: none of it may run, and what reaches git is the text.
// At the stress size every text goes into every input; by default each text goes into
// two inputs and the -m reason, every input getting at least one text (testutil.Cells).
func TestActionInjection(t *testing.T) {
	t.Parallel()
	a := loadAction(t)
	evil := []string{
		"$(touch pwned1)",
		"`touch pwned2`",
		`"; touch pwned3; echo "`,
		`'; touch pwned4; echo '`,
		"x\ntouch pwned5\n",
		"${IFS}$(touch${IFS}pwned6)",
		"*",
		"::set-output name=result::success",
	}
	for i, v := range evil {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			je, r := newActionEnv(t, true)
			all := []map[string]string{
				{"args": "refs/ci/x " + v},
				{"args": v},
				{"stdin": v},
				{"push": "origin " + v},
				{"timeout": v, "args": "refs/ci/t HEAD"},
				{"max-attempts": v, "args": "refs/ci/t HEAD"},
				{"install-shim": v},
				{"push-rebase": v, "install-shim": "true"},
				{"gather-no-wait": v, "gather": "results", "gather-key": "action-test-gather-key-0123"},
				{"gather-land": v, "gather-key": "action-test-gather-key-0123"},
				{"api": v, "push": "origin HEAD:main"},
				{"forge": v, "api": "true", "push": "origin HEAD:main"},
				{"version": v},
				// One argument a line: the -m reason is the text, verbatim.
				{"args": "-m\n" + strings.TrimRight(v, "\n") + "\nrefs/heads/msg" + fmt.Sprint(i) + "\n" + r.Commit},
			}
			reason := len(all) - 1 // the reflog below reads what it wrote
			if 2*len(evil) < reason {
				t.Fatalf("%d texts cannot reach %d inputs two at a time: give each text a third input", len(evil), reason)
			}
			// Text i goes into inputs i and i+len(evil) (modulo the inputs): two texts
			// an input at most, every input at least one while 2×len(evil) ≥ reason.
			for _, inputs := range testutil.Cells(t, all, i%reason, (i+len(evil))%reason, reason) {
				runAction(t, a, je, inputs)
				steps, _ := filepath.Glob(filepath.Join(je.temp, "step*"))
				for _, dir := range append(steps, je.workspace, je.temp) {
					matches, _ := filepath.Glob(filepath.Join(dir, "pwned*"))
					if len(matches) > 0 {
						t.Fatalf("inputs %q ran shell code: %q", inputs, matches)
					}
				}
			}
			if strings.Contains(v, "\n") {
				return // the reason was split into lines: git refuses or keeps the first
			}
			reflog := r.Run("reflog", "show", "--format=%gs", "refs/heads/msg"+fmt.Sprint(i))
			if reflog != strings.TrimRight(v, "\n") {
				t.Errorf("reflog message %q, want %q", reflog, v)
			}
		})
	}
}

// TestActionRelease runs the action as a workflow's `uses: refretry/refretry@<tag>`
// does, with the default version, against a local server that serves the snapshot
// release scripts/release-check.sh built as GitHub serves releases (without it, the
// test skips): the tag's archive is installed and run, and whatever does not check
// out stops the job before anything from the archive runs.
func TestActionRelease(t *testing.T) {
	rel := releasetest.Need(t)
	t.Parallel()
	a := loadAction(t)
	host := rel.HostArchive()
	// job is a job's environment for the action checked out at the release's tag, as
	// the runner checks it out: <work>/_actions/<owner>/<repo>/<ref>. withGo leaves Go
	// on PATH, for a source build.
	job := func(t *testing.T, withGo bool, edit func(map[string][]byte)) (actionEnv, *testutil.Repo, func(string) int) {
		t.Helper()
		je, r := newActionEnv(t, false)
		if !withGo {
			if err := os.Remove(filepath.Join(je.pathDirs[0], "go")); err != nil {
				t.Fatal(err)
			}
		}
		src, err := filepath.Abs(".")
		if err != nil {
			t.Fatal(err)
		}
		je.actionPath = filepath.Join(t.TempDir(), "_actions", "refretry", "refretry", rel.Tag)
		if err := os.MkdirAll(filepath.Dir(je.actionPath), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(src, je.actionPath); err != nil {
			t.Fatal(err)
		}
		url, hits := rel.Serve(t, edit)
		je.env = append(je.env, "REFRETRY_RELEASES_URL="+url)
		return je, r, hits
	}

	t.Run("the tag's archive", func(t *testing.T) {
		t.Parallel()
		je, r, hits := job(t, false, nil) // no Go: nothing is built
		installed := filepath.Join(je.temp, "refretry-action", "refretry")
		var took [2]time.Duration
		for i := range took {
			ref := fmt.Sprintf("refs/ci/release/%d", i)
			inputs := map[string]string{"args": ref + " HEAD"}
			if i == 1 {
				// The mirror as the releases-url input, without the env variable.
				for k, kv := range je.env {
					if url, ok := strings.CutPrefix(kv, "REFRETRY_RELEASES_URL="); ok {
						inputs["releases-url"] = url
						je.env = slices.Delete(je.env, k, k+1)
						break
					}
				}
				if inputs["releases-url"] == "" {
					t.Fatal("the job has no REFRETRY_RELEASES_URL")
				}
			}
			res := runAction(t, a, je, inputs)
			if res.failedAt != "" {
				t.Fatalf("step %s failed:\n%s", res.failedAt, res.stderr)
			}
			took[i] = res.took["install"]
			checkSuccess(t, res, 1, ref)
			if len(res.uses) != 0 {
				t.Errorf("other actions for a release: %+v", res.uses)
			}
			// (GITHUB_PATH is the job's: the second use adds the same directory again.)
			if want := []string{filepath.Dir(installed)}; !slices.Equal(slices.Compact(res.path), want) {
				t.Errorf("GITHUB_PATH = %q, want %q", res.path, want)
			}
			if !strings.Contains(res.log, "installed "+host) {
				t.Errorf("no word of the archive:\n%s", res.log)
			}
		}
		got, err := os.ReadFile(installed)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, rel.Binary(t, runtime.GOOS, runtime.GOARCH)) {
			t.Errorf("%s is not the binary of %s", installed, host)
		}
		if n := hits(host); n != 2 {
			t.Errorf("the archive was downloaded %d times, want 2", n)
		}
		if refs := r.Refs("refs/ci/"); refs["refs/ci/release/1"] != r.Commit {
			t.Errorf("refs %v", refs)
		}
		t.Logf("timing: the action's install step from the local server (download, SHA-256 check, unpack): first %v, warm %v",
			took[0].Round(time.Millisecond), took[1].Round(time.Millisecond))
	})

	for _, tt := range []struct {
		name string
		edit func(map[string][]byte)
		want string
	}{
		{"corrupted archive", func(f map[string][]byte) { releasetest.Corrupt(f, host) }, "SHA-256 of " + host + " is "},
		{"no checksum line", func(f map[string][]byte) { releasetest.DropChecksum(f, host) }, "has no line for " + host},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			je, r, _ := job(t, true, tt.edit) // Go on PATH, and still no build
			res := runAction(t, a, je, map[string]string{"args": "refs/ci/release/x HEAD"})
			if res.failedAt != "install" {
				t.Fatalf("failed at %q, want the install step:\n%s", res.failedAt, res.log)
			}
			if !strings.Contains(res.stderr, "::error title=refretry install::") || !strings.Contains(res.stderr, tt.want) {
				t.Errorf("no error annotation saying %q:\n%s", tt.want, res.stderr)
			}
			if _, err := os.Stat(filepath.Join(je.temp, "refretry-action", "refretry")); !os.IsNotExist(err) {
				t.Errorf("a binary was installed (%v)", err)
			}
			if len(res.path) != 0 || len(r.Refs("refs/ci/")) != 0 {
				t.Errorf("GITHUB_PATH %q, refs %v", res.path, r.Refs("refs/ci/"))
			}
		})
	}

	t.Run("no archive for the platform: source", func(t *testing.T) {
		t.Parallel()
		je, _, hits := job(t, true, func(f map[string][]byte) { delete(f, host) })
		res := runAction(t, a, je, map[string]string{"args": "refs/ci/release/src HEAD"})
		if res.failedAt != "" {
			t.Fatalf("step %s failed:\n%s", res.failedAt, res.stderr)
		}
		checkSuccess(t, res, 1, "refs/ci/release/src")
		if !strings.Contains(res.log, "(404): building from source") || hits(host) != 1 || hits("checksums.txt") != 0 {
			t.Errorf("archive fetched %d times, checksums.txt %d:\n%s", hits(host), hits("checksums.txt"), res.log)
		}
		// The source build carries the Action's tag as its version.
		cmd := exec.Command(filepath.Join(je.temp, "refretry-action", "refretry"), "version")
		b, err := cmd.Output()
		if err != nil || !strings.HasPrefix(string(b), "refretry version "+rel.Tag+"\n") {
			t.Errorf("refretry version: %v\n%s", err, b)
		}
	})
}
