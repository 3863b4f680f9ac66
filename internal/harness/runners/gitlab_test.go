package runners

import (
	"archive/tar"
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
	stdout, err := w.runCmd(t, proj, []string{"NODE_OPTIONS=--require=" + polyfill}, gcl, args...)
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
	const why = "refretry: the inputs args, stdin, push, gather and run-script did not run: this job's own script replaced the component's; give your commands as the input run-script (a script in the project), or drop those inputs"
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
