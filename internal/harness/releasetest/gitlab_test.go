package releasetest

import (
	"bytes"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/refretry/refretry/internal/harness/forgeapi"
	"github.com/refretry/refretry/internal/harness/testutil"
)

type glInput struct {
	Description string   `yaml:"description"`
	Default     *string  `yaml:"default"`
	Options     []string `yaml:"options"`
}

type glJob struct {
	Stage string `yaml:"stage"`
	Cache struct {
		Key   string   `yaml:"key"`
		Paths []string `yaml:"paths"`
	} `yaml:"cache"`
	Image        string            `yaml:"image"`
	Variables    map[string]string `yaml:"variables"`
	BeforeScript []string          `yaml:"before_script"`
	Script       []string          `yaml:"script"`
}

// component is templates/refretry.yml: its spec header and its jobs, before the
// inputs are interpolated.
type component struct {
	inputs map[string]glInput
	jobs   yaml.Node
	body   string // the text after the header
}

func loadComponent(t *testing.T) component {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "templates", "refretry.yml"))
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var header struct {
		Spec struct {
			Inputs map[string]glInput `yaml:"inputs"`
		} `yaml:"spec"`
	}
	var c component
	if err := dec.Decode(&header); err != nil {
		t.Fatalf("spec header: %v", err)
	}
	if err := dec.Decode(&c.jobs); err != nil {
		t.Fatalf("jobs: %v", err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err != io.EOF {
		t.Fatalf("more than two YAML documents (%v)", err)
	}
	c.inputs = header.Spec.Inputs
	_, c.body, _ = strings.Cut(string(b), "\n---\n")
	return c
}

// actionInputs are the inputs action.yml declares, which the component takes too.
func actionInputs(t *testing.T) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "action.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var a struct {
		Inputs map[string]any `yaml:"inputs"`
	}
	if err := yaml.Unmarshal(b, &a); err != nil {
		t.Fatal(err)
	}
	return a.Inputs
}

var glInputRef = regexp.MustCompile(`\$\[\[\s*inputs\.([\w-]+)\s*\]\]`)

// interpolate returns the component's jobs with $[[ inputs.NAME ]] replaced as GitLab
// does: in the parsed values (and keys), by the given input or its default.
func (c component) interpolate(t *testing.T, inputs map[string]string) map[string]glJob {
	t.Helper()
	for name := range inputs {
		if _, ok := c.inputs[name]; !ok {
			t.Fatalf("no input %s", name)
		}
	}
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		if n.Kind == yaml.ScalarNode {
			n.Value = glInputRef.ReplaceAllStringFunc(n.Value, func(m string) string {
				name := glInputRef.FindStringSubmatch(m)[1]
				if v, ok := inputs[name]; ok {
					return v
				}
				return *c.inputs[name].Default
			})
		}
		for _, child := range n.Content {
			walk(child)
		}
	}
	n := c.jobs // the tree is shared; interpolate a deep copy
	var b bytes.Buffer
	if err := yaml.NewEncoder(&b).Encode(&n); err != nil {
		t.Fatal(err)
	}
	var copied yaml.Node
	if err := yaml.Unmarshal(b.Bytes(), &copied); err != nil {
		t.Fatal(err)
	}
	walk(&copied)
	var jobs map[string]glJob
	if err := copied.Decode(&jobs); err != nil {
		t.Fatal(err)
	}
	return jobs
}

// TestGitLabComponent checks the component without running it: its inputs are the
// Action's (plus where the job goes), each is declared and used, no input reaches a
// script except through a variable, and its install code is scripts/action-install.sh.
func TestGitLabComponent(t *testing.T) {
	t.Parallel()
	c := loadComponent(t)
	want := slices.Sorted(maps.Keys(actionInputs(t)))
	want = append(want, "image", "job-name", "stage", "run-script")
	slices.Sort(want)
	if got := slices.Sorted(maps.Keys(c.inputs)); !slices.Equal(got, want) {
		t.Errorf("inputs %q, want the Action's and image, job-name, stage, run-script: %q", got, want)
	}
	used := map[string]bool{}
	for _, m := range glInputRef.FindAllStringSubmatch(c.body, -1) {
		used[m[1]] = true
		if _, ok := c.inputs[m[1]]; !ok {
			t.Errorf("%s is used but not declared", m[0])
		}
	}
	for name, in := range c.inputs {
		if !used[name] {
			t.Errorf("input %s is declared but not used", name)
		}
		if in.Description == "" || in.Default == nil {
			t.Errorf("input %s needs a description and a default", name)
		}
		if in.Options != nil && !slices.Contains(in.Options, *in.Default) {
			t.Errorf("input %s: default %q is not one of its options", name, *in.Default)
		}
	}

	jobs := c.interpolate(t, nil)
	job, ok := jobs["refretry"]
	if !ok || len(jobs) != 1 {
		t.Fatalf("jobs %v, want one, named by job-name", slices.Collect(maps.Keys(jobs)))
	}
	if job.Stage != "test" || job.Image == "" || len(job.BeforeScript) == 0 || len(job.Script) == 0 {
		t.Errorf("job %+v", job)
	}
	// Go's build cache for a source build: in the project directory, where GitLab's
	// cache can keep it, and given to the install code alone.
	if job.Cache.Key == "" || !slices.Equal(job.Cache.Paths, []string{goCacheDir + "/"}) ||
		!strings.Contains(strings.Join(job.BeforeScript, "\n"), `GOCACHE="$CI_PROJECT_DIR/`+goCacheDir+`"`) {
		t.Errorf("cache %+v, and the install's GOCACHE, want %s", job.Cache, goCacheDir)
	}
	for _, s := range append(slices.Clone(job.BeforeScript), job.Script...) {
		if strings.Contains(s, "$[[") {
			t.Errorf("a script interpolates an input:\n%s", s)
		}
	}
	script, err := os.ReadFile(filepath.Join(root, "scripts", "action-install.sh"))
	if err != nil {
		t.Fatal(err)
	}
	if got := embeddedInstall(t, job); got != string(script) {
		t.Errorf("the component's install code is not scripts/action-install.sh: update the copy between the REFRETRY_INSTALL_SH lines")
	}
}

// goCacheDir is where the component keeps Go's build cache, in the project directory.
const goCacheDir = ".refretry/go-build"

// embeddedInstall is the text of the install script the job's before_script runs.
func embeddedInstall(t *testing.T, job glJob) string {
	t.Helper()
	all := strings.Join(job.BeforeScript, "\n")
	_, rest, ok := strings.Cut(all, "<<'REFRETRY_INSTALL_SH'\n")
	body, _, ok2 := strings.Cut(rest, "\nREFRETRY_INSTALL_SH\n")
	if !ok || !ok2 {
		t.Fatal("no REFRETRY_INSTALL_SH here-document in before_script")
	}
	return body + "\n"
}

// TestGitLabExample: the example pipeline parses, and what it passes to the component
// is what the component takes.
func TestGitLabExample(t *testing.T) {
	t.Parallel()
	c := loadComponent(t)
	b, err := os.ReadFile(filepath.Join(root, "examples", "gitlab", "component.gitlab-ci.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		Include []struct {
			Component string            `yaml:"component"`
			Inputs    map[string]string `yaml:"inputs"`
		} `yaml:"include"`
		Stages []string `yaml:"stages"`
	}
	if err := yaml.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	if len(p.Include) == 0 {
		t.Fatal("the example includes nothing")
	}
	for _, inc := range p.Include {
		if !regexp.MustCompile(`^\$CI_SERVER_FQDN/.+/refretry@v\d+\.\d+\.\d+$`).MatchString(inc.Component) {
			t.Errorf("component %q", inc.Component)
		}
		for name, v := range inc.Inputs {
			in, ok := c.inputs[name]
			switch {
			case !ok:
				t.Errorf("the example passes %s, which the component does not take", name)
			case in.Options != nil && !slices.Contains(in.Options, v):
				t.Errorf("the example passes %s: %q, not one of %q", name, v, in.Options)
			case name == "stage" && !slices.Contains(p.Stages, v):
				t.Errorf("stage %q is not among the pipeline's stages %q", v, p.Stages)
			}
		}
	}
}

// glRun is one run of the component's job, as a GitLab runner runs it: the job's
// variables (expanded) in the environment, before_script and script (and extra, as
// a job of the same name would give its own) in one bash, in CI_PROJECT_DIR.
func glRun(t *testing.T, c component, inputs map[string]string, env []string, projectDir string, extra ...string) (string, error) {
	t.Helper()
	jobs := c.interpolate(t, inputs)
	name := "refretry"
	if v, ok := inputs["job-name"]; ok {
		name = v
	}
	job := jobs[name]
	env = append(env, "CI=true", "GITLAB_CI=true", "CI_JOB_ID=42", "CI_PROJECT_DIR="+projectDir)
	lookup := func(k string) string {
		for i := len(env) - 1; i >= 0; i-- {
			if key, v, ok := strings.Cut(env[i], "="); ok && key == k {
				return v
			}
		}
		return ""
	}
	for _, k := range slices.Sorted(maps.Keys(job.Variables)) {
		env = append(env, k+"="+os.Expand(job.Variables[k], lookup))
	}
	script := "set -eo pipefail\n" + strings.Join(job.BeforeScript, "\n") + "\n" +
		strings.Join(job.Script, "\n") + "\n" + strings.Join(extra, "\n") + "\n"
	file := filepath.Join(t.TempDir(), "job.sh")
	if err := os.WriteFile(file, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", "--noprofile", "--norc", file)
	cmd.Dir, cmd.Env = projectDir, env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// glEnv is a job's environment around a throwaway repository made by git 2.55, with
// a bare remote "origin" beside it.
func glEnv(t *testing.T) (*testutil.Repo, []string) {
	t.Helper()
	g := testutil.NewGit(t)
	r := testutil.NewRepo(t, g, "reftable")
	remote := filepath.Join(t.TempDir(), "remote.git")
	r.Run("init", "-q", "--bare", remote)
	r.Run("remote", "add", "origin", remote)
	env := goEnv(t)
	for _, kv := range r.Env {
		if !strings.HasPrefix(kv, "PATH=") {
			env = append(env, kv)
		}
	}
	return r, append(env, "PATH="+filepath.Dir(g.Path)+":"+os.Getenv("PATH"))
}

// TestGitLabComponentRun runs the component's job against the snapshot release on a
// local server.
func TestGitLabComponentRun(t *testing.T) {
	rel := Need(t)
	c := loadComponent(t)
	url, hits := rel.Serve(t, nil)

	t.Run("release, update, push, shim", func(t *testing.T) {
		t.Parallel()
		r, env := glEnv(t)
		which := filepath.Join(t.TempDir(), "which-git")
		out, err := glRun(t, c, map[string]string{
			"version": rel.Tag, "args": "refs/ci/1/a HEAD", "push": "origin refs/ci/1/a",
			"timeout": "30s", "max-attempts": "5", "install-shim": "true",
		}, append(env, "REFRETRY_RELEASES_URL="+url), r.Dir,
			// A job's own script after the component's: git update-ref goes through the shim.
			`command -v git >`+which, `git update-ref refs/ci/1/shim HEAD`)
		if err != nil {
			t.Fatalf("job: %v\n%s", err, out)
		}
		if !strings.Contains(out, "installed "+rel.HostArchive()) || hits(rel.HostArchive()) == 0 {
			t.Errorf("the job did not install the release archive:\n%s", out)
		}
		refs := r.Refs("refs/ci/")
		if refs["refs/ci/1/a"] != r.Commit || refs["refs/ci/1/shim"] != r.Commit {
			t.Errorf("refs %v\n%s", refs, out)
		}
		if got := r.Run("ls-remote", "origin", "refs/ci/1/a"); !strings.HasPrefix(got, r.Commit) {
			t.Errorf("the remote has %q\n%s", got, out)
		}
		if b, _ := os.ReadFile(which); !strings.HasSuffix(strings.TrimSpace(string(b)), "/shim/git") {
			t.Errorf("later commands ran git from %q, not the shim", b)
		}
		// update-ref, push, and the shim's update-ref: three operations in the log.
		log, _ := os.ReadFile(filepath.Join(r.Dir, ".refretry", "log.jsonl"))
		if ops := strings.Count(string(log), `"msg":"summary"`); ops != 3 {
			t.Errorf(".refretry/log.jsonl has %d operation records:\n%s", ops, log)
		}
	})

	t.Run("no archive: go install; stdin; working-directory", func(t *testing.T) {
		t.Parallel()
		r, env := glEnv(t)
		if err := os.Mkdir(filepath.Join(r.Dir, "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
		src, _ := sourceRepo(t)
		const version = "v0.0.0-test" // not on the server: 404
		env = proxyEnv(t, env, moduleProxy(t, src, version))
		// The job's build cache, restored by GitLab in a real job: here this machine's,
		// so that the build is as warm as the tests'.
		linkGoCache(t, filepath.Join(r.Dir, goCacheDir))
		out, err := glRun(t, c, map[string]string{
			"version": version, "args": "--create-reflog\n-m\nrecorded by CI, job 2", "working-directory": "sub",
			"stdin": "create refs/ci/2/a " + r.Commit + "\ncreate refs/ci/2/b " + r.Commit + "\n",
		}, append(env, "REFRETRY_RELEASES_URL="+url), r.Dir)
		if err != nil {
			t.Fatalf("job: %v\n%s", err, out)
		}
		if !strings.Contains(out, "(404): building from source") || !strings.Contains(out, "refretry version "+version) ||
			!strings.Contains(out, "build cache "+filepath.Join(r.Dir, goCacheDir)) {
			t.Errorf("the job did not go install %s with its build cache:\n%s", version, out)
		}
		refs := r.Refs("refs/ci/")
		if refs["refs/ci/2/a"] != r.Commit || refs["refs/ci/2/b"] != r.Commit {
			t.Errorf("refs %v\n%s", refs, out)
		}
		if got := r.Run("reflog", "refs/ci/2/a"); !strings.Contains(got, "recorded by CI, job 2") {
			t.Errorf("reflog %q", got)
		}
	})

	t.Run("gather without a key", func(t *testing.T) {
		t.Parallel()
		r, env := glEnv(t)
		out, err := glRun(t, c, map[string]string{"gather": "results"}, env, r.Dir)
		if want := "refretry: gather needs a gather key: set the masked CI/CD variable REFRETRY_GATHER_KEY"; err == nil || !strings.Contains(out, want) {
			t.Errorf("job: %v\n%s\nwant it to fail with %q", err, out, want)
		}
		if left := r.Run("ls-remote", "origin", "refs/refretry/*"); left != "" {
			t.Errorf("staged without a key: %s", left)
		}
	})

	t.Run("bad install-shim", func(t *testing.T) {
		t.Parallel()
		r, env := glEnv(t)
		out, err := glRun(t, c, map[string]string{"install-shim": "yes"}, env, r.Dir)
		if err == nil || !strings.Contains(out, "install-shim must be true or false") {
			t.Errorf("job: %v\n%s", err, out)
		}
	})

	// push-rebase: refused without the shim (nothing would see the job's git push),
	// and with it the rest of the job's script has the opt-in.
	for _, tc := range []struct {
		name   string
		inputs map[string]string
		fail   string // the job fails saying this; "" when it succeeds
	}{
		{"bad push-rebase", map[string]string{"push-rebase": "yes", "install-shim": "true"}, "refretry: push-rebase must be true or false"},
		{"push-rebase without the shim", map[string]string{"push-rebase": "true"}, "refretry: push-rebase needs install-shim: true"},
		{"push-rebase", map[string]string{"push-rebase": "true", "install-shim": "true", "version": rel.Tag}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, env := glEnv(t)
			out, err := glRun(t, c, tc.inputs, append(env, "REFRETRY_RELEASES_URL="+url), r.Dir,
				`echo "opt-in: ${REFRETRY_PUSH_REBASE:-unset}"`)
			switch {
			case tc.fail != "" && (err == nil || !strings.Contains(out, tc.fail) || strings.Contains(out, "opt-in:")):
				t.Errorf("job: %v\n%s\nwant it to fail with %q", err, out, tc.fail)
			case tc.fail == "" && (err != nil || !strings.Contains(out, "opt-in: 1\n")):
				t.Errorf("job: %v\n%s\nwant it to end with REFRETRY_PUSH_REBASE=1", err, out)
			}
		})
	}
}

// TestGitLabComponentFanIn runs the fan-in with the component's job as a runner runs
// it, without a release: version source builds this checkout (REFRETRY_SOURCE_DIR,
// which the install script reads) with this machine's build cache. Two
// parallel:matrix jobs with gather and gather-no-wait stage their commits and end;
// the land job with gather-land lands both. The key is the CI/CD variable
// REFRETRY_GATHER_KEY, as the component's header advises. Bad values stop the job
// before anything is installed or staged.
func TestGitLabComponentFanIn(t *testing.T) {
	t.Parallel()
	c := loadComponent(t)
	r, env := glEnv(t)
	linkGoCache(t, filepath.Join(r.Dir, goCacheDir))
	keyed := append(slices.Clone(env), "REFRETRY_SOURCE_DIR="+root, "REFRETRY_GATHER_KEY=gitlab-test-gather-key-0123")
	r.Run("push", "-q", "origin", "HEAD:refs/heads/results")
	for _, job := range []string{"a", "b"} {
		r.Run("reset", "-q", "--hard", r.Commit)
		r.NewCommit("result of job " + job)
		if out, err := glRun(t, c, map[string]string{"version": "source", "gather": "results", "gather-no-wait": "true"}, keyed, r.Dir); err != nil {
			t.Fatalf("job %s: %v\n%s", job, err, out)
		}
	}
	staged := strings.Split(r.Run("ls-remote", "origin", "refs/refretry/gather/results/*"), "\n")
	if tip := r.Run("ls-remote", "origin", "refs/heads/results"); len(staged) != 2 || !strings.HasPrefix(tip, r.Commit) {
		t.Fatalf("after the matrix jobs: staged %q, results at %q; want 2 staged and results where it was", staged, tip)
	}

	for _, tc := range []struct {
		name   string
		inputs map[string]string
		env    []string
		fail   string
	}{
		{"bad gather-no-wait", map[string]string{"gather": "results", "gather-no-wait": "yes"}, keyed, "refretry: gather-no-wait must be true or false\n"},
		{"gather-no-wait alone", map[string]string{"gather-no-wait": "true"}, keyed, "refretry: gather-no-wait needs gather: the branch to stage the job's commit for\n"},
		{"gather-land without a key", map[string]string{"gather-land": "results"}, env,
			"refretry: gather-land needs a gather key: set the masked CI/CD variable REFRETRY_GATHER_KEY (or the input gather-key), or gather-key: none"},
	} {
		out, err := glRun(t, c, tc.inputs, tc.env, r.Dir)
		if err == nil || !strings.HasPrefix(out, tc.fail) {
			t.Errorf("%s: %v\n%s\nwant the job to fail at once with %q", tc.name, err, out, tc.fail)
		}
	}
	if got := r.Run("ls-remote", "origin", "refs/refretry/gather/results/*"); len(strings.Split(got, "\n")) != 2 {
		t.Fatalf("the refused jobs changed what is staged: %q", got)
	}

	out, err := glRun(t, c, map[string]string{"version": "source", "gather-land": "results"}, keyed, r.Dir)
	if err != nil || !strings.Contains(out, "refretry: landed 2 staged commits in 1 gathers\n") {
		t.Fatalf("the land job: %v\n%s", err, out)
	}
	r.Run("fetch", "-q", "origin", "results")
	if got := r.Run("log", "--format=%s", r.Commit+"..FETCH_HEAD"); got != "result of job b\nresult of job a" {
		t.Errorf("results has %q on top of where it was, want both jobs' commits, in the order they staged", got)
	}
	if left := r.Run("ls-remote", "origin", "refs/refretry/*"); left != "" {
		t.Errorf("left on the remote: %s", left)
	}
}

// TestGitLabComponentAPI runs the component's job with api against the fake GitLab,
// without a release (version source, as TestGitLabComponentFanIn): its push lands
// through GitLab's commits API with the token of the masked CI/CD variable
// REFRETRY_API_TOKEN, which the job's output never shows, and the API and project come
// from GitLab CI's variables. Bad api and forge values stop the job at once.
func TestGitLabComponentAPI(t *testing.T) {
	t.Parallel()
	c := loadComponent(t)
	s := forgeapi.StartGitLab(t, forgeapi.Options{})
	r, env := glEnv(t)
	linkGoCache(t, filepath.Join(r.Dir, goCacheDir))
	r.Run("remote", "set-url", "origin", s.CloneURL())
	r.Run("fetch", "-q", "origin", "main")
	r.Run("checkout", "-q", "--detach", "FETCH_HEAD")
	if err := os.WriteFile(filepath.Join(r.Dir, "result.txt"), []byte("ok\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r.Run("add", "result.txt")
	r.Run("commit", "-q", "-m", "result of the job")
	ci := append(slices.Clone(env), "REFRETRY_SOURCE_DIR="+root, "CI_API_V4_URL="+s.APIURL(), "CI_PROJECT_PATH=acme/widgets",
		"CI_PROJECT_ID=1", "REFRETRY_API_TOKEN="+forgeapi.GitLabToken)
	out, err := glRun(t, c, map[string]string{"version": "source", "api": "true", "push": "origin HEAD:main"}, ci, r.Dir)
	if err != nil {
		t.Fatalf("job: %v\n%s", err, out)
	}
	if got := s.Git("log", "-1", "--format=%cn %s", "main"); got != "GitLab User result of the job" {
		t.Errorf("main's commit: %q, want GitLab's", got)
	}
	if strings.Contains(out, forgeapi.GitLabToken) {
		t.Errorf("the token is in the job's output:\n%s", out)
	}
	for _, tc := range []struct {
		inputs map[string]string
		fail   string
	}{
		{map[string]string{"api": "yes", "push": "origin HEAD:main"}, "refretry: api must be true or false\n"},
		{map[string]string{"api": "true", "forge": "bitbucket", "push": "origin HEAD:main"}, "refretry: forge must be github, gitea or gitlab\n"},
		{map[string]string{"forge": "gitlab", "push": "origin HEAD:main"}, "refretry: forge goes with api: true\n"},
		{map[string]string{"api": "true"}, "refretry: api needs push, gather or gather-land: what to land through the forge's API\n"},
	} {
		if out, err := glRun(t, c, tc.inputs, ci, r.Dir); err == nil || !strings.HasPrefix(out, tc.fail) {
			t.Errorf("%v: %v\n%s\nwant the job to fail at once with %q", tc.inputs, err, out, tc.fail)
		}
	}
}
