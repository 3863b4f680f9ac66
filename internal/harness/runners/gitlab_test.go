package runners

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// releaseTag is the release the GitLab tests install: refretry built from this
// checkout, served as GitHub serves a release, from a mirror on 127.0.0.1 that the
// component reaches through its releases-url input.
const releaseTag = "v0.0.0-runners"

// componentTag is the tag of the component project (componentProject) that pipelines
// include the component at, and the release the pipelines that include it so install,
// as a user pins both to one version.
const componentTag = "v1.2.3"

// serveRelease serves w's refretry as release tag (<base>/download/<tag>/ the archive
// for this platform and checksums.txt) and returns <base>.
func (w *world) serveRelease(t *testing.T, tag string) string {
	t.Helper()
	bin, err := os.ReadFile(filepath.Join(w.bin, "refretry"))
	if err != nil {
		t.Fatal(err)
	}
	var archive strings.Builder
	gz := gzip.NewWriter(&archive)
	tw := tar.NewWriter(gz)
	if err := tw.WriteHeader(&tar.Header{Name: "refretry", Mode: 0o755, Size: int64(len(bin))}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write(bin); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("refretry_%s_%s_%s.tar.gz", strings.TrimPrefix(tag, "v"), runtime.GOOS, runtime.GOARCH)
	sum := sha256.Sum256([]byte(archive.String()))
	files := map[string]string{
		name:            archive.String(),
		"checksums.txt": hex.EncodeToString(sum[:]) + "  " + name + "\n",
	}
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, ok := files[strings.TrimPrefix(r.URL.Path, "/download/"+tag+"/")]
		if !ok {
			http.NotFound(rw, r)
			return
		}
		_, _ = rw.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// writeFiles writes files (a path relative to dir, slash-separated, and its content)
// into dir; a file whose name ends in .sh is executable.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		path := filepath.Join(dir, filepath.FromSlash(name))
		mode := os.FileMode(0o644)
		if strings.HasSuffix(name, ".sh") {
			mode = 0o755
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}
}

// readFile is the content of a file the test needs.
func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// gitLabProject is the project a pipeline runs in: a clone of ci/results.git at the
// branch results, to which files (its .gitlab-ci.yml among them) are committed and
// pushed first, so that a job's HEAD is the remote's results (w.base). The clone's
// origin is the project's URL, from which gitlab-ci-local derives CI_SERVER_URL and
// CI_PROJECT_PATH (ci/results).
func (w *world) gitLabProject(t *testing.T, files map[string]string) string {
	t.Helper()
	proj := filepath.Join(t.TempDir(), "project")
	w.run(t, "", "clone", "-q", "-b", "results", w.url, proj)
	// gitlab-ci-local's state, beside the project's files.
	files[".gitignore"] = "/.gitlab-ci-local/\n"
	writeFiles(t, proj, files)
	w.run(t, proj, "add", "-A")
	w.run(t, proj, "commit", "-q", "-m", "pipeline")
	w.run(t, proj, "push", "-q", "origin", "results")
	w.base = w.run(t, proj, "rev-parse", "HEAD")
	return proj
}

// gitLabCILocal runs the pipeline of proj with gitlab-ci-local, with the CI/CD
// variables vars (NAME=value), and returns its output; name names the log RUNNERS_DEBUG
// keeps. The runner is the shell executor, each job in a copy of the project of its
// own (.gitlab-ci-local/builds/<job>, kept after the run: jobCheckouts); artifacts stay
// in gitlab-ci-local's state and are not copied back into proj.
func (w *world) gitLabCILocal(t *testing.T, proj, name string, vars ...string) (string, error) {
	t.Helper()
	b, err := exec.Command(filepath.Join(w.root, "scripts", "get-gitlab-ci-local.sh")).Output()
	if err != nil {
		t.Fatalf("scripts/get-gitlab-ci-local.sh: %v", err)
	}
	gcl := strings.TrimSpace(string(b))
	polyfill, err := filepath.Abs(filepath.Join("testdata", "set-methods.cjs"))
	if err != nil {
		t.Fatal(err)
	}
	// The pipelines give the component an empty image: see testdata/gitlab.
	args := []string{"--force-shell-executor", "--shell-isolation", "--no-color", "--no-artifacts-to-source",
		"--ignore-schema-paths", "#/definitions/image/oneOf/0/minLength"}
	// The gather key the component takes from the CI/CD variable of that name.
	vars = append(vars, "REFRETRY_GATHER_KEY="+gatherKey)
	for _, v := range vars {
		args = append(args, "--variable", v)
	}
	env := []string{"NODE_OPTIONS=--require=" + polyfill}
	stdout, stderr, err := w.runCmd(t, proj, env, gcl, args...)
	// gitlab-ci-local fetches a pipeline's includes all at once, and each include of a
	// component copies the component's templates/ into the same directory with cp -r:
	// with two includes of one component (as the component example has), the later
	// copy can fail with "File exists", before any job has run (seen in a CI run). The
	// first copy is whole, and a second run finds it and fetches nothing.
	if err != nil && bytes.Contains(stderr, []byte("Component include could not be fetched")) &&
		bytes.Contains(stderr, []byte("File exists")) {
		t.Log("gitlab-ci-local raced itself copying the component's templates; running the pipeline again")
		stdout, _, err = w.runCmd(t, proj, env, gcl, args...)
	}
	if d := os.Getenv("RUNNERS_DEBUG"); d != "" {
		_ = os.WriteFile(filepath.Join(d, name+".log"), stdout, 0o644)
	}
	return string(stdout), err
}

// runGitLab runs pipeline (a file in testdata/gitlab) as the project's .gitlab-ci.yml,
// with the component (templates/refretry.yml, as include: local finds it) and
// testdata/gitlab/ci committed beside it.
func (w *world) runGitLab(t *testing.T, pipeline string, vars ...string) (string, error) {
	t.Helper()
	proj := w.gitLabProject(t, map[string]string{
		".gitlab-ci.yml":         readFile(t, filepath.Join("testdata", "gitlab", pipeline)),
		"templates/refretry.yml": readFile(t, filepath.Join(w.root, "templates", "refretry.yml")),
		"ci/result.sh":           readFile(t, filepath.Join("testdata", "gitlab", "ci", "result.sh")),
	})
	return w.gitLabCILocal(t, proj, pipeline, vars...)
}

// componentProject serves the component as a GitLab instance serves a component
// project, tools/refretry.git on the git server: its tag componentTag (annotated) holds
// this checkout's templates/refretry.yml, and its main, a commit later, no longer has
// it, so that a pipeline that finds the component found it at the tag.
func (w *world) componentProject(t *testing.T) {
	t.Helper()
	bare := w.initBare(t, "tools/refretry.git")
	src := filepath.Join(t.TempDir(), "refretry")
	w.run(t, "", "init", "-q", "-b", "main", src)
	writeFiles(t, src, map[string]string{
		"templates/refretry.yml": readFile(t, filepath.Join(w.root, "templates", "refretry.yml")),
	})
	w.run(t, src, "add", "-A")
	w.run(t, src, "commit", "-q", "-m", "the component")
	w.run(t, src, "tag", "-a", "-m", componentTag, componentTag)
	w.run(t, src, "rm", "-q", "templates/refretry.yml")
	w.run(t, src, "commit", "-q", "-m", "after the release")
	w.run(t, src, "push", "-q", bare, "main", componentTag)
}

// jobCheckouts is git status --porcelain --untracked-files=all of every job's
// checkout after a run, by the directory gitlab-ci-local ran it in (its shell isolation
// gives each job a copy of the project, .gitlab-ci-local/builds/<job>, and keeps it;
// builds/.docker is its copy for container jobs, which runs no job here).
func (w *world) jobCheckouts(t *testing.T, proj string) map[string]string {
	t.Helper()
	builds := filepath.Join(proj, ".gitlab-ci-local", "builds")
	entries, err := os.ReadDir(builds)
	if err != nil {
		t.Fatal(err)
	}
	status := map[string]string{}
	for _, e := range entries {
		if e.IsDir() && e.Name() != ".docker" {
			status[e.Name()] = w.run(t, filepath.Join(builds, e.Name()), "status", "--porcelain", "--untracked-files=all")
		}
	}
	return status
}

// passed reports whether gitlab-ci-local's summary in out says job passed.
func passed(out, job string) bool {
	return regexp.MustCompile(`(?m)^ PASS  ` + regexp.QuoteMeta(job) + ` *$`).MatchString(out)
}

// checkGather checks the run of an 8-job matrix land: [1]…[8] that gathers with the
// component and ci/result.sh (the report of each in reports): every job passed and its
// result landed once; each job's checkout was clean after its refretry call wrote the
// log in .refretry/ and git add -A, and nothing of .refretry/ landed; the component's
// temporary directories are gone from TMPDIR.
func (w *world) checkGather(t *testing.T, out, reports string) {
	t.Helper()
	var want []string
	for i := 1; i <= 8; i++ {
		want = append(want, fmt.Sprintf("result of shard %d", i))
		if !passed(out, fmt.Sprintf("land: [%d]", i)) {
			t.Errorf("job land: [%d] did not pass", i)
		}
		dir := filepath.Join(reports, fmt.Sprintf("shard-%d", i))
		status, err := os.ReadFile(filepath.Join(dir, "status"))
		if err != nil || len(status) != 0 {
			t.Errorf("shard %d: git status --porcelain after git add -A and the commit (%v):\n%s", i, err, status)
		}
		// The component's log, written by the job's own refretry call.
		log, _ := os.ReadFile(filepath.Join(dir, "log.jsonl"))
		if !strings.Contains(string(log), `"msg":"summary"`) || !strings.Contains(string(log), `"result":"success"`) ||
			!strings.Contains(string(log), fmt.Sprintf(`"refs":["refs/runners/shard-%d"]`, i)) {
			t.Errorf("shard %d: .refretry/log.jsonl has no successful summary:\n%s", i, log)
		}
	}
	w.checkLanded(t, want)
	// Nothing of refretry's was committed by git add -A.
	if files := w.run(t, w.remote, "ls-tree", "-r", "--name-only", "results"); strings.Contains(files, ".refretry") {
		t.Errorf("results holds refretry's files:\n%s", files)
	}
	w.checkNoLeftovers(t)
	if t.Failed() {
		t.Logf("gitlab-ci-local:\n%s", tail(out, 20000))
	}
}

// TestGitLabGather runs the component's gather input alone (with run-script for the
// job's own commit; no job of its own replaces the component's script), the component
// included with include: local and inputs, in an 8-job parallel:matrix with
// gitlab-ci-local: every job succeeds and every result lands once (checkGather).
func TestGitLabGather(t *testing.T) {
	need(t)
	w := newWorld(t, "files")
	reports := t.TempDir()
	out, err := w.runGitLab(t, "gather.gitlab-ci.yml",
		"RUNNERS_RELEASES_URL="+w.serveRelease(t, releaseTag), "RUNNERS_REPORT_DIR="+reports)
	if err != nil {
		t.Errorf("gitlab-ci-local: %v", err)
	}
	w.checkGather(t, out, reports)
}

// TestGitLabOverrides runs jobs of the component's name with a before_script or a
// script of their own (testdata/gitlab/overrides.gitlab-ci.yml): a job's own
// before_script does not lose the install; a job's own script that drops the gather
// input fails with the sentence that says why; a job's own script with install-shim
// alone runs its git update-ref through the shim.
func TestGitLabOverrides(t *testing.T) {
	need(t)
	w := newWorld(t, "files")
	out, _ := w.runGitLab(t, "overrides.gitlab-ci.yml", "RUNNERS_RELEASES_URL="+w.serveRelease(t, releaseTag))
	if !passed(out, "own-before") {
		t.Errorf("own-before did not pass")
	}
	if got := w.run(t, w.remote, "for-each-ref", "--format=%(refname)", "refs/runners/"); got != "refs/runners/own-before" {
		t.Errorf("the remote's refs/runners/: %q, want own-before's push", got)
	}
	const why = "refretry: the inputs args, stdin, push, gather, gather-land and run-script did not run: this job's own script replaced the component's; give your commands as the input run-script (a script in the project), or drop those inputs"
	if !strings.Contains(out, "> "+why) || passed(out, "own-script") {
		t.Errorf("own-script did not fail saying %q", why)
	}
	if got := w.run(t, w.remote, "rev-parse", "results"); got != w.base {
		t.Errorf("results moved to %s", got)
	}
	if !passed(out, "shim-only") || !regexp.MustCompile(`(?m)^shim-only +> /\S+/refretry-[0-9]+/shim/git$`).MatchString(out) {
		t.Errorf("shim-only did not run its git update-ref through the shim")
	}
	if t.Failed() {
		t.Logf("gitlab-ci-local:\n%s", tail(out, 20000))
	}
	w.checkNoLeftovers(t)
}

// TestGitLabComponentTag includes the component by component: at a tag from the git
// server (testdata/gitlab/component-tag.gitlab-ci.yml), as a project includes a
// released component: gitlab-ci-local clones tools/refretry at the tag (its main, a
// commit later, has no component, and the project none of its own), and the 8 jobs
// of the gather input alone all pass and land once (checkGather).
func TestGitLabComponentTag(t *testing.T) {
	need(t)
	w := newWorld(t, "files")
	w.componentProject(t)
	reports := t.TempDir()
	proj := w.gitLabProject(t, map[string]string{
		".gitlab-ci.yml": readFile(t, filepath.Join("testdata", "gitlab", "component-tag.gitlab-ci.yml")),
		"ci/result.sh":   readFile(t, filepath.Join("testdata", "gitlab", "ci", "result.sh")),
	})
	out, err := w.gitLabCILocal(t, proj, "component-tag",
		"RUNNERS_RELEASES_URL="+w.serveRelease(t, componentTag), "RUNNERS_REPORT_DIR="+reports)
	if err != nil {
		t.Errorf("gitlab-ci-local: %v", err)
	}
	// gitlab-ci-local keeps what it fetched under <state>/includes/<host>/<project>/<ref>.
	fetched, err := os.ReadFile(filepath.Join(proj, ".gitlab-ci-local", "includes", "127.0.0.1", "tools", "refretry", componentTag, "templates", "refretry.yml"))
	if err != nil || string(fetched) != readFile(t, filepath.Join(w.root, "templates", "refretry.yml")) {
		t.Errorf("the component was not fetched from tools/refretry at %s (%v)", componentTag, err)
	}
	w.checkGather(t, out, reports)
}

// TestGitLabComponentLocal includes the component as a local component
// (testdata/gitlab/component-local.gitlab-ci.yml): the project that holds
// templates/refretry.yml includes it at its own commit, and gitlab-ci-local reads it
// from the checkout, downloading nothing. 8 parallel:matrix jobs each record
// refs/runners/shard-<n> with args and push it with push, the shim installed: every job
// passes, every ref lands once at the job's commit, results does not move, every job's
// checkout is clean with refretry's log in it (in the excluded .refretry/), and
// nothing of refretry's is left in TMPDIR.
func TestGitLabComponentLocal(t *testing.T) {
	need(t)
	w := newWorld(t, "files")
	proj := w.gitLabProject(t, map[string]string{
		".gitlab-ci.yml":         readFile(t, filepath.Join("testdata", "gitlab", "component-local.gitlab-ci.yml")),
		"templates/refretry.yml": readFile(t, filepath.Join(w.root, "templates", "refretry.yml")),
	})
	out, err := w.gitLabCILocal(t, proj, "component-local", "RUNNERS_RELEASES_URL="+w.serveRelease(t, releaseTag))
	if err != nil {
		t.Errorf("gitlab-ci-local: %v", err)
	}
	if _, err := os.Stat(filepath.Join(proj, ".gitlab-ci-local", "includes")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("gitlab-ci-local downloaded an include for a local component (%v)", err)
	}
	var want []string
	for i := 1; i <= 8; i++ {
		if !passed(out, fmt.Sprintf("record: [%d]", i)) {
			t.Errorf("job record: [%d] did not pass", i)
		}
		want = append(want, fmt.Sprintf("refs/runners/shard-%d %s", i, w.base))
	}
	if got := w.run(t, w.remote, "for-each-ref", "--format=%(refname) %(objectname)", "refs/runners/"); got != strings.Join(want, "\n") {
		t.Errorf("the remote's refs/runners/:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}
	if got := w.run(t, w.remote, "rev-parse", "results"); got != w.base {
		t.Errorf("results moved to %s", got)
	}
	checkouts := w.jobCheckouts(t, proj)
	logged := map[string]bool{}
	for dir, status := range checkouts {
		if status != "" {
			t.Errorf("job checkout %s: git status --porcelain --untracked-files=all:\n%s", dir, status)
		}
		log, _ := os.ReadFile(filepath.Join(proj, ".gitlab-ci-local", "builds", dir, ".refretry", "log.jsonl"))
		if m := regexp.MustCompile(`"msg":"summary".*"command":"update-ref","result":"success".*"refs":\["(refs/runners/shard-[1-8])"\]`).FindSubmatch(log); m != nil {
			logged[string(m[1])] = true
		}
	}
	if len(checkouts) != 8 || len(logged) != 8 {
		t.Errorf("%d job checkouts, %d of them with refretry's summary of their ref in .refretry/log.jsonl; want 8 and 8", len(checkouts), len(logged))
	}
	if status := w.run(t, proj, "status", "--porcelain", "--untracked-files=all"); status != "" {
		t.Errorf("the project after the run:\n%s", status)
	}
	w.checkNoLeftovers(t)
	if t.Failed() {
		t.Logf("gitlab-ci-local:\n%s", tail(out, 20000))
	}
}

// adaptation is one change an example needs to run offline: old, which must occur in
// the example exactly n times (so that an example that changes fails the test rather
// than running unadapted), becomes new.
type adaptation struct {
	old, new string
	n        int
}

// adapt is example with the adaptations made.
func adapt(t *testing.T, example string, as ...adaptation) string {
	t.Helper()
	for _, a := range as {
		if got := strings.Count(example, a.old); got != a.n {
			t.Fatalf("the example has %q %d times, want %d: adapt the test to it", a.old, got, a.n)
		}
		example = strings.ReplaceAll(example, a.old, a.new)
	}
	return example
}

// TestGitLabExamples runs the GitLab examples with gitlab-ci-local, adapted only for
// being offline (adapt: each change must match the example as it is), on the files
// backend. The project is ci/results on the git server, so the remote the examples
// build from CI_SERVER_PROTOCOL, CI_SERVER_HOST, CI_SERVER_PORT and CI_PROJECT_PATH is
// the server's, port kept; RESULTS_TOKEN is any value (the server asks for no
// password). Their images are not pulled: the runner is the shell executor.
//
// examples/gitlab/.gitlab-ci.yml: its go install of refretry@latest, which needs the
// network, becomes command -v refretry, which finds refretry built from this
// checkout (first on PATH; GOPATH is an empty directory of the test's, so the
// example's PATH line adds nothing before it). Jobs on a shell runner share HOME, and
// git config --global takes its lock without waiting: each job gets a global git
// config of its own (GIT_CONFIG_GLOBAL), as a container's HOME is on GitLab. All 8
// test jobs and collect pass, every job's result ref lands once with its report, and
// collect finds 8.
//
// examples/gitlab/component.gitlab-ci.yml: <group> is tools, where componentProject
// serves the component at its tag; both includes get the input image "" (see
// testdata/gitlab/gather.gitlab-ci.yml). Its go test ./... tests a small module of the
// project's; the project's default branch is results, so that nightly's rule holds;
// release v1.2.3 comes from the test's mirror through the CI/CD variable
// REFRETRY_RELEASES_URL. test, record-result and nightly pass: the pipeline's result
// ref and nightly land once, at the pipeline's commit, and nightly's git update-ref
// went through the shim (refretry's log has its summary).
//
// After each: every job's checkout holds nothing of refretry's (git status --porcelain
// --untracked-files=all: the jobs' own reports alone), nor does the project or TMPDIR.
func TestGitLabExamples(t *testing.T) {
	need(t)
	examples := filepath.Join(moduleRoot(t), "examples")

	t.Run(".gitlab-ci.yml", func(t *testing.T) {
		w := newWorld(t, "files")
		pipeline := adapt(t, readFile(t, filepath.Join(examples, "gitlab", ".gitlab-ci.yml")), adaptation{
			"    - go install github.com/refretry/refretry@latest\n",
			"    - command -v refretry # offline: refretry built from this checkout\n", 1})
		proj := w.gitLabProject(t, map[string]string{
			".gitlab-ci.yml":              pipeline,
			"examples/push-matrix.sh":     readFile(t, filepath.Join(examples, "push-matrix.sh")),
			"examples/collect-results.sh": readFile(t, filepath.Join(examples, "collect-results.sh")),
		})
		out, err := w.gitLabCILocal(t, proj, "example-matrix", "RESULTS_TOKEN=runners-token",
			"GOPATH="+t.TempDir(), "GIT_CONFIG_GLOBAL="+filepath.Join(t.TempDir(), "$CI_JOB_ID.gitconfig"))
		if err != nil {
			t.Errorf("gitlab-ci-local: %v", err)
		}
		installed := regexp.MustCompile(`(?m)^test: \[[1-8]\] +> ` + regexp.QuoteMeta(filepath.Join(w.bin, "refretry")) + `$`)
		if n := len(installed.FindAllString(out, -1)); n != 8 {
			t.Errorf("%d test jobs found refretry built from this checkout, want 8", n)
		}
		run := regexp.MustCompile(`(?m)^collect +> 8 results for run (\d+)$`).FindStringSubmatch(out)
		if run == nil || !passed(out, "collect") {
			t.Fatalf("collect did not pass with 8 results\n%s", tail(out, 20000))
		}
		want := []string{"refs/heads/main", "refs/heads/results"}
		var statuses []string
		for i := 1; i <= 8; i++ {
			if !passed(out, fmt.Sprintf("test: [%d]", i)) {
				t.Errorf("job test: [%d] did not pass", i)
			}
			ref := fmt.Sprintf("refs/ci/%s/shard-%d", run[1], i)
			want = append(want, ref)
			report := fmt.Sprintf("report-%d.txt", i)
			if got := w.run(t, w.remote, "log", "--format=%P %s", w.base+".."+ref); got != w.base+" CI result: run "+run[1]+", job shard-"+strconv.Itoa(i) {
				t.Errorf("%s: %q, want one commit on the pipeline's", ref, got)
			} else if files, body := w.run(t, w.remote, "ls-tree", "--name-only", ref), w.run(t, w.remote, "show", ref+":"+report); files != report || body != fmt.Sprintf("shard %d passed", i) {
				t.Errorf("%s holds %q, %s %q", ref, files, report, body)
			}
			statuses = append(statuses, "?? out/"+report)
		}
		got := strings.Split(w.run(t, w.remote, "for-each-ref", "--format=%(refname)"), "\n")
		if slices.Sort(got); !slices.Equal(got, slices.Sorted(slices.Values(want))) {
			t.Errorf("the remote's refs %q, want %q", got, want)
		}
		// The test jobs' checkouts hold their reports, collect's nothing.
		var gotStatuses []string
		for _, s := range w.jobCheckouts(t, proj) {
			gotStatuses = append(gotStatuses, s)
		}
		statuses = append(statuses, "")
		if slices.Sort(gotStatuses); !slices.Equal(gotStatuses, slices.Sorted(slices.Values(statuses))) {
			t.Errorf("the jobs' checkouts' git status: %q, want %q", gotStatuses, statuses)
		}
		w.checkExampleAfter(t, proj, out)
	})

	t.Run("component.gitlab-ci.yml", func(t *testing.T) {
		w := newWorld(t, "files")
		w.componentProject(t)
		pipeline := adapt(t, readFile(t, filepath.Join(examples, "gitlab", "component.gitlab-ci.yml")),
			adaptation{"<group>", "tools", 3}, // the includes and the comment that names it
			adaptation{"    inputs:\n", "    inputs:\n      image: \"\" # offline: the shell executor's\n", 2})
		proj := w.gitLabProject(t, map[string]string{
			".gitlab-ci.yml": pipeline,
			"go.mod":         "module example.com/results\n\ngo 1.22\n",
			"results_test.go": "package results\n\nimport (\n\t\"os\"\n\t\"testing\"\n)\n\n" +
				"func TestReadme(t *testing.T) {\n\tif b, err := os.ReadFile(\"README\"); err != nil || string(b) != \"results\\n\" {\n\t\tt.Fatalf(\"README: %q, %v\", b, err)\n\t}\n}\n",
		})
		w.run(t, proj, "remote", "set-head", "origin", "results")
		out, err := w.gitLabCILocal(t, proj, "example-component", "RESULTS_TOKEN=runners-token",
			"REFRETRY_RELEASES_URL="+w.serveRelease(t, componentTag))
		if err != nil {
			t.Errorf("gitlab-ci-local: %v", err)
		}
		for _, job := range []string{"test", "record-result", "nightly"} {
			if !passed(out, job) {
				t.Errorf("job %s did not pass", job)
			}
		}
		if !regexp.MustCompile(`(?m)^test +> ok\s+example\.com/results\s`).MatchString(out) {
			t.Errorf("test's go test ./... did not pass its test")
		}
		refs := w.run(t, w.remote, "for-each-ref", "--format=%(refname) %(objectname)")
		want := regexp.MustCompile(`^refs/ci/(\d+)/result ` + w.base + `\nrefs/heads/main [0-9a-f]{40}\nrefs/heads/nightly ` + w.base + `\nrefs/heads/results ` + w.base + `$`)
		if !want.MatchString(refs) {
			t.Errorf("the remote's refs:\n%s\nwant the pipeline's result ref and nightly at %s, results unmoved", refs, w.base)
		}
		checkouts := w.jobCheckouts(t, proj)
		shimmed := false
		for dir, status := range checkouts {
			if status != "" {
				t.Errorf("job checkout %s: git status --porcelain --untracked-files=all:\n%s", dir, status)
			}
			log, _ := os.ReadFile(filepath.Join(proj, ".gitlab-ci-local", "builds", dir, ".refretry", "log.jsonl"))
			shimmed = shimmed || regexp.MustCompile(`"msg":"summary".*"command":"update-ref","shim":true,"result":"success".*"refs":\["refs/heads/nightly"\]`).Match(log)
		}
		if len(checkouts) != 3 || !shimmed {
			t.Errorf("%d job checkouts, want 3; nightly's git update-ref through the shim logged: %v", len(checkouts), shimmed)
		}
		w.checkExampleAfter(t, proj, out)
	})
}

// checkExampleAfter checks what is left after an example's run: the project's git
// status is clean and TMPDIR holds nothing of refretry's.
func (w *world) checkExampleAfter(t *testing.T, proj, out string) {
	t.Helper()
	if status := w.run(t, proj, "status", "--porcelain", "--untracked-files=all"); status != "" {
		t.Errorf("the project after the run:\n%s", status)
	}
	w.checkNoLeftovers(t)
	if t.Failed() {
		t.Logf("gitlab-ci-local:\n%s", tail(out, 20000))
	}
}
