package runners

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
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

// serveRelease serves w's refretry as release releaseTag (<base>/download/<tag>/ the
// archive for this platform and checksums.txt) and returns <base>.
func (w *world) serveRelease(t *testing.T) string {
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
	name := fmt.Sprintf("refretry_%s_%s_%s.tar.gz", strings.TrimPrefix(releaseTag, "v"), runtime.GOOS, runtime.GOARCH)
	sum := sha256.Sum256([]byte(archive.String()))
	files := map[string]string{
		name:            archive.String(),
		"checksums.txt": hex.EncodeToString(sum[:]) + "  " + name + "\n",
	}
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, ok := files[strings.TrimPrefix(r.URL.Path, "/download/"+releaseTag+"/")]
		if !ok {
			http.NotFound(rw, r)
			return
		}
		_, _ = rw.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// runGitLab runs pipeline (a file in testdata/gitlab) with gitlab-ci-local in a clone
// of results.git at the branch results, to which the pipeline, the component
// (templates/refretry.yml, as include: local finds it) and testdata/gitlab/ci are
// committed and pushed first (so a job's HEAD is the remote's results). The runner is
// the shell executor, each job in a copy of the project of its own.
func (w *world) runGitLab(t *testing.T, pipeline string, vars ...string) (string, error) {
	t.Helper()
	b, err := exec.Command(filepath.Join(w.root, "scripts", "get-gitlab-ci-local.sh")).Output()
	if err != nil {
		t.Fatalf("scripts/get-gitlab-ci-local.sh: %v", err)
	}
	gcl := strings.TrimSpace(string(b))
	proj := filepath.Join(t.TempDir(), "project")
	w.run(t, "", "clone", "-q", "-b", "results", w.url, proj)
	copyFile := func(from, to string, mode os.FileMode) {
		b, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to, b, mode); err != nil {
			t.Fatal(err)
		}
	}
	copyFile(filepath.Join("testdata", "gitlab", pipeline), filepath.Join(proj, ".gitlab-ci.yml"), 0o644)
	copyFile(filepath.Join(w.root, "templates", "refretry.yml"), filepath.Join(proj, "templates", "refretry.yml"), 0o644)
	copyFile(filepath.Join("testdata", "gitlab", "ci", "result.sh"), filepath.Join(proj, "ci", "result.sh"), 0o755)
	// gitlab-ci-local's state, beside the project's files.
	if err := os.WriteFile(filepath.Join(proj, ".gitignore"), []byte("/.gitlab-ci-local/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	w.run(t, proj, "add", "-A")
	w.run(t, proj, "commit", "-q", "-m", "pipeline")
	w.run(t, proj, "push", "-q", "origin", "results")
	w.base = w.run(t, proj, "rev-parse", "HEAD")

	polyfill, err := filepath.Abs(filepath.Join("testdata", "set-methods.cjs"))
	if err != nil {
		t.Fatal(err)
	}
	// The pipelines give the component an empty image: see testdata/gitlab.
	args := []string{"--force-shell-executor", "--shell-isolation", "--no-color",
		"--ignore-schema-paths", "#/definitions/image/oneOf/0/minLength"}
	// The gather key the component takes from the CI/CD variable of that name.
	vars = append(vars, "REFRETRY_GATHER_KEY="+gatherKey)
	for _, v := range vars {
		args = append(args, "--variable", v)
	}
	stdout, err := w.runCmd(t, proj, []string{"NODE_OPTIONS=--require=" + polyfill}, gcl, args...)
	if d := os.Getenv("RUNNERS_DEBUG"); d != "" {
		_ = os.WriteFile(filepath.Join(d, pipeline+".log"), stdout, 0o644)
	}
	return string(stdout), err
}

// TestGitLabGather runs the component's gather input alone (with run-script for the
// job's own commit) in an 8-job parallel:matrix with gitlab-ci-local: every job
// succeeds and every result lands once; the job's checkout's git status is clean after
// its own refretry call wrote the log in .refretry/ and git add -A (the directory is
// excluded), nothing of .refretry/ lands, and the component's temporary directories are
// gone from TMPDIR after the jobs.
func TestGitLabGather(t *testing.T) {
	need(t)
	w := newWorld(t, "files")
	reports := t.TempDir()
	out, err := w.runGitLab(t, "gather.gitlab-ci.yml",
		"RUNNERS_RELEASES_URL="+w.serveRelease(t), "RUNNERS_REPORT_DIR="+reports)
	if err != nil {
		t.Errorf("gitlab-ci-local: %v\n%s", err, tail(out, 20000))
	}
	var want []string
	for i := 1; i <= 8; i++ {
		want = append(want, fmt.Sprintf("result of shard %d", i))
		if !strings.Contains(out, fmt.Sprintf(" PASS  land: [%d]\n", i)) {
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
	if t.Failed() {
		t.Logf("gitlab-ci-local:\n%s", tail(out, 20000))
	}
	w.checkLanded(t, want)
	// Nothing of refretry's was committed by git add -A.
	if files := w.run(t, w.remote, "ls-tree", "-r", "--name-only", "results"); strings.Contains(files, ".refretry") {
		t.Errorf("results holds refretry's files:\n%s", files)
	}
	w.checkNoLeftovers(t)
}

// TestGitLabOverrides runs jobs of the component's name with a before_script or a
// script of their own (testdata/gitlab/overrides.gitlab-ci.yml): a job's own
// before_script does not lose the install; a job's own script that drops the gather
// input fails with the sentence that says why; a job's own script with install-shim
// alone runs its git update-ref through the shim.
func TestGitLabOverrides(t *testing.T) {
	need(t)
	w := newWorld(t, "files")
	out, _ := w.runGitLab(t, "overrides.gitlab-ci.yml", "RUNNERS_RELEASES_URL="+w.serveRelease(t))
	passed := func(job string) bool {
		return regexp.MustCompile(`(?m)^ PASS  ` + regexp.QuoteMeta(job) + ` *$`).MatchString(out)
	}
	if !passed("own-before") {
		t.Errorf("own-before did not pass")
	}
	if got := w.run(t, w.remote, "for-each-ref", "--format=%(refname)", "refs/runners/"); got != "refs/runners/own-before" {
		t.Errorf("the remote's refs/runners/: %q, want own-before's push", got)
	}
	const why = "refretry: the inputs args, stdin, push, gather and run-script did not run: this job's own script replaced the component's; give your commands as the input run-script (a script in the project), or drop those inputs"
	if !strings.Contains(out, "> "+why) || passed("own-script") {
		t.Errorf("own-script did not fail saying %q", why)
	}
	if got := w.run(t, w.remote, "rev-parse", "results"); got != w.base {
		t.Errorf("results moved to %s", got)
	}
	if !passed("shim-only") || !regexp.MustCompile(`(?m)^shim-only +> /\S+/refretry-[0-9]+/shim/git$`).MatchString(out) {
		t.Errorf("shim-only did not run its git update-ref through the shim")
	}
	if t.Failed() {
		t.Logf("gitlab-ci-local:\n%s", tail(out, 20000))
	}
	w.checkNoLeftovers(t)
}
