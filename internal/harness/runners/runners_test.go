package runners

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/refretry/refretry/internal/harness/gitserver"
	"github.com/refretry/refretry/internal/harness/hermetic"
	"github.com/refretry/refretry/internal/harness/testutil"
)

// need skips the test unless REFRETRY_RUNNERS=1: the runner tests take minutes.
func need(t *testing.T) {
	t.Helper()
	if os.Getenv("REFRETRY_RUNNERS") != "1" {
		t.Skip("runner tests are slow: REFRETRY_RUNNERS=1 go test -count=1 ./internal/harness/runners")
	}
}

// runnerDeadline bounds one runner's run, so that a hung job fails the test with its
// output instead of reaching go test's own timeout. It is no measure of speed: a run
// takes a minute on a loaded two-core machine.
const runnerDeadline = 8 * time.Minute

// moduleRoot is the refretry checkout this test runs in.
func moduleRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "action.yml")); err != nil {
		t.Fatalf("no action.yml at the module root %s: %v", root, err)
	}
	return root
}

// gatherKey is the secret the workflows and pipelines give their gathers (the
// Action's gather-key input, the component's REFRETRY_GATHER_KEY variable).
const gatherKey = "0f5b2c7e9a1d4e6b8c3f0a2d5e7b9c1f4a6d8e0b2c4f6a8d"

// goEnv is the value of a `go env` variable of this machine.
func goEnv(t *testing.T, name string) string {
	t.Helper()
	out, err := exec.Command("go", "env", name).Output()
	if err != nil {
		t.Fatalf("go env %s: %v", name, err)
	}
	return strings.TrimSpace(string(out))
}

// world is what a runner's jobs see: a bin directory with refretry (built from this
// checkout) and git 2.55 first on PATH, a HOME, a TMPDIR and a cache directory of the
// test's own, and the project's git server serving a bare repository ci/results.git.
type world struct {
	root    string // the refretry checkout
	bin     string
	home    string
	tmp     string // the runner's TMPDIR, checked for leftovers at the end
	served  string // the git server's root: a repository <group>/<name>.git in it is served
	remote  string // ci/results.git on disk
	base    string // results before the jobs ran
	url     string // ci/results.git over HTTP
	git     testutil.Git
	env     []string // the runner's environment
	backend string
}

// newWorld builds refretry, starts the git server and seeds ci/results.git: main holds
// examples/collect-results.sh (the matrix example's collect job runs it from its
// checkout), and the branch results a README. The repository's path has a group, as a
// GitLab project's has: gitlab-ci-local derives CI_SERVER_URL, CI_PROJECT_PATH and
// where it fetches a component from the checkout's origin, and takes a URL without a
// group for none.
func newWorld(t *testing.T, backend string) *world {
	t.Helper()
	g := testutil.NewGit(t)
	w := &world{root: moduleRoot(t), bin: t.TempDir(), home: t.TempDir(), tmp: t.TempDir(), git: g, backend: backend}
	build := exec.Command("go", "build", "-o", filepath.Join(w.bin, "refretry"), ".")
	build.Dir = w.root
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	if err := os.Symlink(g.Path, filepath.Join(w.bin, "git")); err != nil {
		t.Fatal(err)
	}
	// The runners run Go (go run of act) with this machine's caches.
	cache := filepath.Join(w.home, ".cache")
	path := w.bin + string(os.PathListSeparator) + os.Getenv("PATH")
	w.env = append(hermetic.Env(os.Environ(), w.home),
		"PATH="+path, "XDG_CACHE_HOME="+cache, "TMPDIR="+w.tmp,
		"GOCACHE="+goEnv(t, "GOCACHE"), "GOMODCACHE="+goEnv(t, "GOMODCACHE"), "GOPATH="+goEnv(t, "GOPATH"))

	w.served = t.TempDir()
	w.remote = w.initBare(t, "ci/results.git")
	seed := filepath.Join(t.TempDir(), "seed")
	w.run(t, "", "init", "-q", "-b", "main", seed)
	script, err := os.ReadFile(filepath.Join(w.root, "examples", "collect-results.sh"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(seed, "examples"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(seed, "examples", "collect-results.sh"), script, 0o755); err != nil {
		t.Fatal(err)
	}
	w.run(t, seed, "add", "-A")
	w.run(t, seed, "commit", "-q", "-m", "main")
	w.run(t, seed, "checkout", "-q", "-b", "results")
	if err := os.WriteFile(filepath.Join(seed, "README"), []byte("results\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	w.run(t, seed, "add", "README")
	w.run(t, seed, "commit", "-q", "-m", "results")
	w.run(t, seed, "push", "-q", w.remote, "main", "results")
	w.base = w.run(t, w.remote, "rev-parse", "results")

	srv, err := gitserver.Start(g.Path, w.served, gitserver.Options{ReceivePack: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	w.url = srv.URL("ci/results.git")
	return w
}

// initBare makes an empty bare repository at path (such as group/name.git) under the
// git server's root, with the world's ref backend and the branch main as HEAD, and
// returns its directory.
func (w *world) initBare(t *testing.T, path string) string {
	t.Helper()
	dir := filepath.Join(w.served, filepath.FromSlash(path))
	args := []string{"init", "-q", "--bare", "-b", "main"}
	if w.backend == "reftable" {
		args = append(args, "--ref-format=reftable")
	}
	w.run(t, "", append(args, dir)...)
	return dir
}

// run runs git in dir ("" for the current directory) and returns its trimmed output.
func (w *world) run(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(w.git.Path, args...)
	cmd.Dir = dir
	cmd.Env = hermetic.Env(os.Environ(), w.home)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// checkLanded checks that results holds every commit subject in want exactly once, on
// top of base, and that the remote has no ref but main and results (no staged
// ref of a gather left behind).
func (w *world) checkLanded(t *testing.T, want []string) {
	t.Helper()
	got := strings.Split(w.run(t, w.remote, "log", "--format=%s", w.base+"..results"), "\n")
	slices.Sort(got)
	want = slices.Sorted(slices.Values(want))
	if !slices.Equal(got, want) {
		t.Errorf("results holds %q, want each of %q once", got, want)
	}
	refs := w.run(t, w.remote, "for-each-ref", "--format=%(refname)")
	if refs != "refs/heads/main\nrefs/heads/results" {
		t.Errorf("the remote's refs:\n%s\nwant main and results only", refs)
	}
}

// checkNoLeftovers checks that the runner's TMPDIR holds nothing of refretry's.
func (w *world) checkNoLeftovers(t *testing.T) {
	t.Helper()
	entries, err := os.ReadDir(w.tmp)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.Contains(strings.ToLower(e.Name()), "refretry") {
			t.Errorf("left in TMPDIR after the run: %s", e.Name())
		}
	}
}

// runCmd runs a runner's command line with the world's environment in dir, bounded by
// runnerDeadline, and returns its stdout and stderr; the test logs both.
func (w *world) runCmd(t *testing.T, dir string, extraEnv []string, name string, args ...string) (stdout, stderr []byte, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), runnerDeadline)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(slices.Clone(w.env), extraEnv...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err = cmd.Run()
	t.Logf("%s: %v (wall %v)", name, err, time.Since(start).Round(time.Second))
	if err != nil || os.Getenv("RUNNERS_DEBUG") != "" {
		t.Logf("stderr:\n%s", tail(errb.String(), 6000))
	}
	return out.Bytes(), errb.Bytes(), err
}

// tail is the last n bytes of s.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// lines splits b into lines.
func lines(b []byte) []string {
	var ls []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		ls = append(ls, sc.Text())
	}
	return ls
}
