//go:build unix

package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/refretry/refretry/internal/testutil"
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
		if s.Shell != "bash" {
			t.Errorf("step %s: shell %q, want bash", s.ID, s.Shell)
		}
	}
	for _, name := range []string{"args", "stdin", "push", "timeout", "max-attempts", "install-shim", "working-directory"} {
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
// the directories added to GITHUB_PATH put first on PATH for later steps.
type actionRun struct {
	outputs   map[string]string // the action's outputs
	steps     map[string]map[string]string
	summary   string   // every step's summary, concatenated
	path      []string // GITHUB_PATH lines, in order
	failedAt  string   // id of the step that failed, if one did
	stderr    string   // the failing step's output
	workspace string
}

type actionEnv struct {
	workspace string   // GITHUB_WORKSPACE: the repository
	temp      string   // RUNNER_TEMP
	pathDirs  []string // PATH before the action
	env       []string // the rest of the job's environment
}

var expr = regexp.MustCompile(`\$\{\{\s*(.*?)\s*\}\}`)

func runAction(t *testing.T, a actionFile, je actionEnv, inputs map[string]string) actionRun {
	t.Helper()
	actionPath, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	for name := range inputs {
		if _, ok := a.Inputs[name]; !ok {
			t.Fatalf("no input %s", name)
		}
	}
	res := actionRun{steps: map[string]map[string]string{}, outputs: map[string]string{}, workspace: je.workspace}
	githubPath := filepath.Join(je.temp, "github_path")
	eval := func(s string) string {
		return expr.ReplaceAllStringFunc(s, func(m string) string {
			e := strings.TrimSpace(expr.FindStringSubmatch(m)[1])
			switch parts := strings.Split(e, "."); {
			case len(parts) == 2 && parts[0] == "inputs":
				if v, ok := inputs[parts[1]]; ok {
					return v
				}
				return a.Inputs[parts[1]].Default
			case len(parts) == 4 && parts[0] == "steps" && parts[2] == "outputs":
				return res.steps[parts[1]][parts[3]]
			}
			t.Fatalf("expression %q is beyond this test's runner", e)
			return ""
		})
	}
	for i, s := range a.Runs.Steps {
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
			"GITHUB_ACTIONS=true", "CI=true", "RUNNER_OS=Linux", "RUNNER_TEMP="+je.temp,
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
		combined, err := cmd.CombinedOutput()
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
	return actionEnv{workspace: r.Dir, temp: t.TempDir(), pathDirs: slices.Compact(dirs), env: env}, r
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
		if len(res.path) != 0 {
			t.Errorf("GITHUB_PATH = %q without a build or a shim", res.path)
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
}

// TestActionInjection gives every input text that a shell would run if it were
// interpolated into a script: none of it may run, and what reaches git is the text.
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
			for _, inputs := range []map[string]string{
				{"args": "refs/ci/x " + v},
				{"args": v},
				{"stdin": v},
				{"push": "origin " + v},
				{"timeout": v, "args": "refs/ci/t HEAD"},
				{"max-attempts": v, "args": "refs/ci/t HEAD"},
				{"install-shim": v},
				// One argument a line: the -m reason is the text, verbatim.
				{"args": "-m\n" + strings.TrimRight(v, "\n") + "\nrefs/heads/msg" + fmt.Sprint(i) + "\n" + r.Commit},
			} {
				runAction(t, a, je, inputs)
				for _, dir := range []string{je.workspace, je.temp, filepath.Join(je.temp, "step1")} {
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
