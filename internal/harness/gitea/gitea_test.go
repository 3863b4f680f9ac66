package gitea

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/refretry/refretry/internal/harness/hermetic"
	"github.com/refretry/refretry/internal/harness/latency"
	"github.com/refretry/refretry/internal/harness/testutil"
)

// testGit is the git of both sides: REFRETRY_TEST_GIT (git 2.55 in CI) or the git on
// PATH.
func testGit(t *testing.T) string {
	t.Helper()
	git := os.Getenv("REFRETRY_TEST_GIT")
	if git == "" {
		git = "git"
	}
	path, err := exec.LookPath(git)
	if err != nil {
		t.Fatalf("git: %v", err)
	}
	return path
}

// result is what one git run left.
type result struct {
	code           int
	stdout, stderr string
}

// client runs git commands as a user of the forge would, in a hermetic environment.
type client struct {
	t   *testing.T
	git string
	env []string
}

func newClient(t *testing.T, git string) *client {
	return &client{t: t, git: git, env: hermetic.Env(os.Environ(), t.TempDir())}
}

// try runs git in dir and returns what it did; only a failure to start fails the test.
func (c *client) try(dir string, args ...string) result {
	c.t.Helper()
	cmd := exec.Command(c.git, args...)
	var stdout, stderr bytes.Buffer
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = dir, c.env, &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		c.t.Fatalf("git %s: %v", strings.Join(args, " "), err)
	}
	return result{code: cmd.ProcessState.ExitCode(), stdout: stdout.String(), stderr: stderr.String()}
}

// run runs git in dir and returns its trimmed stdout; failure fails the test.
func (c *client) run(dir string, args ...string) string {
	c.t.Helper()
	r := c.try(dir, args...)
	if r.code != 0 {
		c.t.Fatalf("git %s: exit %d\n%s%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	return strings.TrimSpace(r.stdout)
}

// clone clones url into a new directory and returns it.
func (c *client) clone(url string) string {
	c.t.Helper()
	dir := filepath.Join(c.t.TempDir(), "clone")
	c.run("", "clone", "-q", url, dir)
	return dir
}

// commit makes a commit (with a file, so that the push carries a pack) and returns
// its id.
func (c *client) commit(dir, msg string) string {
	c.t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "file.txt"), []byte(msg+"\n"), 0o644); err != nil {
		c.t.Fatal(err)
	}
	c.run(dir, "add", "file.txt")
	c.run(dir, "commit", "-q", "-m", msg)
	return c.run(dir, "rev-parse", "HEAD")
}

// TestGitea runs one instance through what the tests and benchmarks built on it rely
// on: a push counted by the proxy, a lost race, a held ref lock and a protected
// branch, each with Gitea's real messages.
func TestGitea(t *testing.T) {
	bin := Need(t)
	git := testGit(t)
	start := time.Now()
	inst, err := Start(Options{Binary: bin, Git: git})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(inst.Close)
	c := newClient(t, git)
	t.Logf("Gitea at %s, %s on both sides; timing: Start %.1f s", inst.ProxyURL(), c.run("", "version"), time.Since(start).Seconds())

	if v, err := inst.ServerVersion(); err != nil || v != Version {
		t.Fatalf("server version %q, %v; want %s", v, err, Version)
	}

	t.Run("push", func(t *testing.T) {
		if err := inst.CreateRepo("r"); err != nil {
			t.Fatal(err)
		}
		fetches := inst.UploadPacks()
		dir := c.clone(inst.URL("r"))
		if inst.UploadPacks() == fetches {
			t.Errorf("the clone made no upload-pack POST through the proxy")
		}
		head := c.commit(dir, "pushed")
		pushes := inst.Pushes()
		start := time.Now()
		c.run(dir, "push", "-q", "origin", "main")
		t.Logf("timing: one push %.2f s", time.Since(start).Seconds())
		if got := inst.Pushes() - pushes; got != 1 {
			t.Errorf("Pushes() counted %d for one push, want 1", got)
		}
		if got, err := inst.Branch("r", "main"); err != nil || got != head {
			t.Errorf("the API says main is at %q (%v), want %s", got, err, head)
		}
		if got := c.run("", "--git-dir", inst.RepoPath("r"), "rev-parse", "refs/heads/main"); got != head {
			t.Errorf("RepoPath's main is at %s, want %s", got, head)
		}
	})

	t.Run("lost race", func(t *testing.T) {
		const n = 12
		if err := inst.CreateRepo("race"); err != nil {
			t.Fatal(err)
		}
		dirs := make([]string, n)
		heads := make([]string, n)
		for k := range dirs {
			dirs[k] = c.clone(inst.URL("race"))
			heads[k] = c.commit(dirs[k], fmt.Sprintf("racer %d", k))
		}
		old := c.run(dirs[0], "rev-parse", "HEAD^")
		pushes := inst.Pushes()
		// Every push reads main before any of them updates it: all race on the server.
		inst.HoldPushes(n)
		results := make([]result, n)
		var wg sync.WaitGroup
		for k := range dirs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[k] = c.try(dirs[k], "push", "--porcelain", "origin", "main")
			}()
		}
		wg.Wait()
		if got := inst.Pushes() - pushes; got != n {
			t.Errorf("Pushes() counted %d for %d pushes", got, n)
		}
		winner := -1
		for k, r := range results {
			if r.code == 0 {
				if winner >= 0 {
					t.Fatalf("pushes %d and %d both won:\n%s\n%s", winner, k, r.stdout, results[winner].stdout)
				}
				winner = k
			}
		}
		if winner < 0 {
			t.Fatalf("no push won; the first:\n%s%s", results[0].stdout, results[0].stderr)
		}
		if got, _ := inst.Branch("race", "main"); got != heads[winner] {
			t.Errorf("main is at %s, want the winner's %s", got, heads[winner])
		}
		// A loser whose receive-pack took the lock after the winner's update finds main
		// moved. One that tried while the winner held the lock, for longer than git's
		// 100 ms ref-lock timeout (a loaded machine), finds it locked instead: allowed,
		// but at least one loser must show the stale value.
		stale := "remote: error: cannot lock ref 'refs/heads/main': is at " + heads[winner] + " but expected " + old
		locked := regexp.MustCompile(`remote: error: cannot lock ref 'refs/heads/main': Unable to create '[^']*/refs/heads/main\.lock': File exists\.`)
		loser := -1
		for k, r := range results {
			if k == winner {
				continue
			}
			if r.code != 1 || !strings.Contains(r.stdout, "!\trefs/heads/main:refs/heads/main\t[remote rejected] (") ||
				(!strings.Contains(r.stderr, stale) && !locked.MatchString(r.stderr)) {
				t.Errorf("loser %d: exit %d, want 1, a [remote rejected] line and %q:\n%s%s", k, r.code, stale, r.stdout, r.stderr)
			}
			if loser < 0 && strings.Contains(r.stderr, stale) {
				loser = k
			}
		}
		if loser < 0 {
			t.Fatalf("no loser says %q", stale)
		}
		t.Logf("winner's stdout: %q", placeholders(results[winner].stdout, inst, old, heads[winner], heads[winner]))
		t.Logf("winner's stderr: %q", placeholders(results[winner].stderr, inst, old, heads[winner], heads[winner]))
		t.Logf("a loser's exit code: %d", results[loser].code)
		t.Logf("a loser's stdout: %q", placeholders(results[loser].stdout, inst, old, heads[winner], heads[loser]))
		t.Logf("a loser's stderr: %q", placeholders(results[loser].stderr, inst, old, heads[winner], heads[loser]))
	})

	t.Run("ref lock", func(t *testing.T) {
		if err := inst.CreateRepo("lock"); err != nil {
			t.Fatal(err)
		}
		dir := c.clone(inst.URL("lock"))
		lock := filepath.Join(inst.RepoPath("lock"), "refs", "heads", "lk.lock")
		if err := os.WriteFile(lock, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		r := c.try(dir, "push", "--porcelain", "origin", "HEAD:refs/heads/lk")
		want := "lk.lock': File exists."
		if r.code != 1 || !strings.Contains(r.stdout, "!\tHEAD:refs/heads/lk\t[remote rejected] (") ||
			!strings.Contains(r.stderr, "remote: error: cannot lock ref 'refs/heads/lk': Unable to create '") ||
			!strings.Contains(r.stderr, want) {
			t.Errorf("push to a locked ref: exit %d, want 1, a [remote rejected] line and %q:\n%s%s", r.code, want, r.stdout, r.stderr)
		}
		head := c.run(dir, "rev-parse", "HEAD")
		t.Logf("locked push's stdout: %q", placeholders(r.stdout, inst, head, head, head))
		t.Logf("locked push's stderr: %q", placeholders(r.stderr, inst, head, head, head))
		if err := os.Remove(lock); err != nil {
			t.Fatal(err)
		}
		c.run(dir, "push", "-q", "origin", "HEAD:refs/heads/lk") // the lock was all that stopped it
	})

	t.Run("protected branch", func(t *testing.T) {
		if err := inst.CreateRepo("protected"); err != nil {
			t.Fatal(err)
		}
		if err := inst.ProtectBranch("protected", "main"); err != nil {
			t.Fatal(err)
		}
		dir := c.clone(inst.URL("protected"))
		old := c.run(dir, "rev-parse", "HEAD")
		head := c.commit(dir, "refused")
		r := c.try(dir, "push", "--porcelain", "origin", "main")
		if r.code != 1 ||
			!strings.Contains(r.stdout, "!\trefs/heads/main:refs/heads/main\t[remote rejected] (pre-receive hook declined)") ||
			!strings.Contains(r.stderr, "remote: error: Not allowed to push to protected branch main") {
			t.Errorf("push to a protected branch: exit %d:\n%s%s", r.code, r.stdout, r.stderr)
		}
		if got, _ := inst.Branch("protected", "main"); got != old {
			t.Errorf("main moved to %s", got)
		}
		t.Logf("protected push's stdout: %q", placeholders(r.stdout, inst, old, head, head))
		t.Logf("protected push's stderr: %q", placeholders(r.stderr, inst, old, head, head))
	})

	t.Run("close", func(t *testing.T) {
		dir, pid := inst.Dir, inst.web.Process.Pid
		inst.Close()
		if groupAlive(pid) {
			t.Errorf("Gitea's process group %d is still there after Close", pid)
		}
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s after Close: %v", dir, err)
		}
		inst.Close() // a second Close does nothing
	})
}

var port = regexp.MustCompile(`127\.0\.0\.1:[0-9]+`)

// placeholders replaces what changes from run to run in a transcript: the port, the
// instance's directory and the commit ids (old, the winner's, the pusher's own).
func placeholders(s string, inst *Instance, old, winner, own string) string {
	s = port.ReplaceAllString(s, "127.0.0.1:<port>")
	s = strings.ReplaceAll(s, inst.Dir, "<dir>")
	for _, h := range [][2]string{{old, "<old>"}, {winner, "<new>"}, {own, "<own>"}} {
		s = strings.ReplaceAll(s, h[0], h[1])
		s = strings.ReplaceAll(s, h[0][:7], h[1]) // abbreviated, as in "a..b"
	}
	return s
}

func TestAppINI(t *testing.T) {
	t.Parallel()
	ini := appINI("/d", "/usr/bin/git", "/d/gitea.sock", "http://127.0.0.1:3002/", Options{})
	for _, want := range []string{
		"WORK_PATH = /d\n", "PROTOCOL = http+unix\n", "HTTP_ADDR = /d/gitea.sock\n", "ROOT_URL = http://127.0.0.1:3002/\n",
		"DB_TYPE = sqlite3\n", "INSTALL_LOCK = true\n", "DISABLE_SSH = true\n", "OFFLINE_MODE = true\n",
		"ROOT = /d/repos\n", "DEFAULT_BRANCH = main\n", "[git]\nPATH = /usr/bin/git\n",
		"[mailer]\nENABLED = false\n", "[cron.update_checker]\nENABLED = false\n",
	} {
		if !strings.Contains(ini, want) {
			t.Errorf("app.ini lacks %q:\n%s", want, ini)
		}
	}
	if root := strings.Contains(ini, "I_AM_BEING_UNSAFE_RUNNING_AS_ROOT = true\n"); root != (os.Getuid() == 0) {
		t.Errorf("I_AM_BEING_UNSAFE_RUNNING_AS_ROOT present: %v, running as root: %v", root, os.Getuid() == 0)
	}
}

func TestBinaryNotGitea(t *testing.T) {
	t.Setenv(EnvBinary, "/bin/true")
	_, err := Binary()
	if err == nil || errors.Is(err, ErrNoBinary) {
		t.Fatalf("Binary() with %s=/bin/true: %v, want an error that is not ErrNoBinary", EnvBinary, err)
	}
}

// skipRecorder records a Skip instead of ending the test.
type skipRecorder struct {
	testing.TB
	skipped string
}

func (r *skipRecorder) Skip(args ...any) { r.skipped = fmt.Sprint(args...) }

// TestNeedDefaultSize: at the default size a cached binary is not enough, the forge
// tests skip, naming the stress tier and the variable; with REFRETRY_GITEA set they
// run (here: a binary that is not Gitea fails the test instead of skipping).
func TestNeedDefaultSize(t *testing.T) {
	t.Setenv(testutil.ScaleEnv, "")
	t.Setenv(EnvBinary, "")
	rec := &skipRecorder{TB: t}
	if got := Need(rec); got != "" || !strings.Contains(rec.skipped, "scripts/test.sh --stress") || !strings.Contains(rec.skipped, EnvBinary) {
		t.Errorf("Need at the default size = %q, skip %q", got, rec.skipped)
	}
	t.Setenv(EnvBinary, "/bin/true")
	if _, err := Binary(); err == nil {
		t.Fatalf("Binary with %s=/bin/true: no error", EnvBinary)
	}
	rec = &skipRecorder{TB: t}
	failed := false
	func() {
		defer func() { failed = recover() != nil }()
		Need(fatalPanics{rec})
	}()
	if rec.skipped != "" || !failed {
		t.Errorf("Need with %s set: skipped %q, failed %v; want it to fail on a binary that is not Gitea", EnvBinary, rec.skipped, failed)
	}
}

// fatalPanics turns Fatal into a panic the test recovers.
type fatalPanics struct{ *skipRecorder }

func (f fatalPanics) Fatal(args ...any) { panic(fmt.Sprint(args...)) }

func TestStartFails(t *testing.T) {
	t.Parallel()
	bin, err := exec.LookPath("false")
	if err != nil {
		t.Skip("no false on PATH")
	}
	_, err = Start(Options{Binary: bin})
	if err == nil || !strings.Contains(err.Error(), "gitea migrate") {
		t.Fatalf("Start with %s as Gitea: %v, want the failure of gitea migrate", bin, err)
	}
}

// TestProxy checks the proxy's counting and holding against a plain backend: no
// Gitea needed.
func TestProxy(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var backend []string
	p, base := startProxy(t, latency.Delay{}, func(r *http.Request) {
		mu.Lock()
		backend = append(backend, r.Method+" "+r.URL.Path)
		mu.Unlock()
	})
	post := func(path, body string) {
		t.Helper()
		resp, err := http.Post(base+path, "application/x-git-receive-pack-request", strings.NewReader(body))
		if err != nil {
			t.Error(err)
			return
		}
		resp.Body.Close()
	}
	seen := func() int { mu.Lock(); defer mu.Unlock(); return len(backend) }

	post("git-upload-pack", "0014command=ls-refs\n0000")
	post("git-receive-pack", "0000") // the probe before a large pack
	resp, err := http.Get(base + "info/refs?service=git-receive-pack")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if p.pushes.Load() != 0 || p.uploadPacks.Load() != 1 || seen() != 3 || p.requests.Load() != 3 {
		t.Fatalf("pushes %d, upload-packs %d, requests %d, backend saw %d; want 0, 1, 3, 3",
			p.pushes.Load(), p.uploadPacks.Load(), p.requests.Load(), seen())
	}

	p.hold(3)
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() { defer wg.Done(); post("git-receive-pack", "00a0 a push") }()
	}
	for { // until the proxy holds both
		p.mu.Lock()
		arrived := p.gate.arrived
		p.mu.Unlock()
		if arrived == 2 {
			break
		}
		runtime.Gosched()
	}
	if got := seen(); got != 3 {
		t.Fatalf("the backend saw %d requests while two pushes were held, want 3", got)
	}
	post("git-receive-pack", "00a0 the third push") // opens the gate
	wg.Wait()
	if p.pushes.Load() != 3 || seen() != 6 {
		t.Fatalf("pushes %d, backend saw %d; want 3, 6", p.pushes.Load(), seen())
	}
	post("git-receive-pack", "00a0 not held") // the gate is gone
	if p.pushes.Load() != 4 {
		t.Fatalf("pushes %d, want 4", p.pushes.Load())
	}
}

// TestProxyLatency: with a round trip set, each request through the proxy spends half
// of it before the backend sees the request and half before the client gets the
// answer, in that order; no Gitea needed.
func TestProxyLatency(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var seen []string
	note := func(s string) { mu.Lock(); seen = append(seen, s); mu.Unlock() }
	p, base := startProxy(t, latency.Delay{RoundTrip: 300 * time.Millisecond, Sleep: func(d time.Duration) { note("sleep " + d.String()) }},
		func(r *http.Request) { note("backend " + r.Method + " " + r.URL.Path) })
	resp, err := http.Get(base + "info/refs?service=git-receive-pack")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	note("client got info/refs")
	resp, err = http.Post(base+"git-receive-pack", "application/x-git-receive-pack-request", strings.NewReader("00a0 a push"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	note("client got receive-pack")
	want := []string{
		"sleep 150ms", "backend GET /u/r.git/info/refs", "sleep 150ms", "client got info/refs",
		"sleep 150ms", "backend POST /u/r.git/git-receive-pack", "sleep 150ms", "client got receive-pack",
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(seen, want) {
		t.Errorf("saw\n%q\nwant\n%q", seen, want)
	}
	if p.requests.Load() != 2 || p.pushes.Load() != 1 {
		t.Errorf("requests %d, pushes %d; want 2, 1", p.requests.Load(), p.pushes.Load())
	}
}

// startProxy starts a proxy with delay in front of a backend that calls saw with each
// request and answers "ok", both closed at the end of the test, and returns it with
// the base URL of a repository behind it.
func startProxy(t *testing.T, delay latency.Delay, saw func(*http.Request)) (*proxy, string) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		saw(r)
		io.WriteString(w, "ok")
	}))
	t.Cleanup(srv.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	target, _ := url.Parse(srv.URL)
	p := newProxy(ln, target, http.DefaultTransport, delay)
	t.Cleanup(p.close)
	return p, "http://" + ln.Addr().String() + "/u/r.git/"
}
