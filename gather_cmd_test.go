package main

import (
	"bytes"
	"fmt"

	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/refretry/refretry/internal/harness/testutil"
)

// killingGit is a git for refretry that runs the real one but SIGKILLs refretry at one
// step of a gather: before or after the push that stages the commit and offers to take
// the lease ("stage"), takes or lets go the lease alone ("lease") or lands a wave
// ("wave"). With SLOW_STEP set to a step, it
// sleeps SLOW_FOR seconds before that step instead. With PUSH_LOG set to a file, it
// appends each push's step to it, a line each; with LOOK_LOG, a line each time an
// ls-remote (a look at the remote) has ended.
const killingGit = `#!/bin/sh
step=other
case "$*" in
*"--force-with-lease=refs/heads/"*) step=wave ;;
*push*":refs/refretry/gather/"*) step=stage ;;
*"--force-with-lease=refs/refretry/lease/"*) step=lease ;;
esac
case " $* " in *" push "*) if [ -n "$PUSH_LOG" ]; then echo "$step" >>"$PUSH_LOG"; fi ;; esac
if [ "$step" = "$SLOW_STEP" ]; then sleep "$SLOW_FOR"; fi
if [ "$step" = "$KILL_STEP" ] && [ "$KILL_WHEN" = before ]; then kill -9 $PPID; exit 137; fi
"$REAL_GIT" "$@"; rc=$?
if [ "$step" = "$KILL_STEP" ] && [ "$KILL_WHEN" = after ]; then kill -9 $PPID; fi
case " $* " in *" ls-remote "*) if [ -n "$LOOK_LOG" ]; then echo looked >>"$LOOK_LOG"; fi ;; esac
exit $rc
`

// TestGatherKilled: a job SIGKILLed at each step of a gather. Nothing is half-applied:
// a commit staged before the kill lands later (with the next job's gather, or
// `refretry gather land`), a lease left by the dead job is taken over, and no commit
// lands twice.
func TestGatherKilled(t *testing.T) {
	t.Parallel()
	g := testutil.NewGit(t)
	type killPoint struct{ step, when string }
	var points []killPoint
	for _, step := range []string{"stage", "lease", "wave"} {
		for _, when := range []string{"before", "after"} {
			points = append(points, killPoint{step, when})
		}
	}
	// At the default size three of the six: each step and each side of it once, the
	// dead job's commit unstaged (stage/before) and staged; all six at the stress size.
	for _, p := range testutil.Cells(t, points, 0, 3, 5) {
		step, when := p.step, p.when
		t.Run(step+"/"+when, func(t *testing.T) {
			t.Parallel()
			f := newGatherFixture(t, g)
			gitIn, clone, refretry, remote, seed := f.git, f.clone, f.refretry, f.remote, f.seed
			wrapper := f.killingGit()
			lease := "--gather-lease=1s"
			// The job that dies.
			dead := clone("dead")
			code, out := refretry(dead, wrapper, []string{"KILL_STEP=" + step, "KILL_WHEN=" + when},
				"push", "--gather", lease, "origin", "HEAD:main")
			if code != 137 {
				t.Fatalf("the job was not killed: exit %d\n%s", code, out)
			}
			// Two jobs after it, at once, and then whatever is left is landed.
			var wg sync.WaitGroup
			for _, name := range []string{"live1", "live2"} {
				dir := clone(name)
				wg.Add(1)
				go func() {
					defer wg.Done()
					if code, out := refretry(dir, g.Path, nil, "push", "--gather", lease, "origin", "HEAD:main"); code != 0 {
						t.Errorf("%s: exit %d\n%s", name, code, out)
					}
				}()
			}
			wg.Wait()
			if code, out := refretry(seed, g.Path, nil, "gather", "land", "file://"+remote, "main"); code != 0 {
				t.Errorf("gather land: exit %d\n%s", code, out)
			}
			log := gitIn(remote, "log", "--format=%s", "main")
			for _, name := range []string{"live1", "live2"} {
				if n := strings.Count(log+"\n", "result of "+name+"\n"); n != 1 {
					t.Errorf("%s is on main %d times:\n%s", name, n, log)
				}
			}
			deadStaged := !(step == "stage" && when == "before")
			if n := strings.Count(log+"\n", "result of dead\n"); n != map[bool]int{true: 1, false: 0}[deadStaged] {
				t.Errorf("the dead job's commit is on main %d times (staged before the kill: %v):\n%s", n, deadStaged, log)
			}
			if left := gitIn(remote, "for-each-ref", "refs/refretry/"); left != "" {
				t.Errorf("left on the remote:\n%s", left)
			}
		})
	}
}

// TestGatherSlowWaves: two live jobs whose waves take longer than the lease timeout
// (each wave's push waits 2 s, the lease is 1 s), as on a loaded runner or a slow
// remote. Each take-over ends the holder's wave; with a fixed patience the two would
// take the lease from each other until their budgets end. Both land, each once.
func TestGatherSlowWaves(t *testing.T) {
	t.Parallel()
	f := newGatherFixture(t, testutil.NewGit(t))
	slow, wrapper := []string{"SLOW_STEP=wave", "SLOW_FOR=2"}, f.killingGit()
	var wg sync.WaitGroup
	outs := make([]string, 2)
	for i, name := range []string{"live1", "live2"} {
		dir := f.clone(name)
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, out := f.refretry(dir, wrapper, slow, "--timeout=40s", "push", "--gather", "--gather-lease=1s", "origin", "HEAD:main")
			if outs[i] = out; code != 0 {
				t.Errorf("%s: exit %d\n%s", name, code, out)
			}
		}()
	}
	wg.Wait()
	log := f.git(f.remote, "log", "--format=%s", "main")
	for _, name := range []string{"live1", "live2"} {
		if n := strings.Count(log+"\n", "result of "+name+"\n"); n != 1 {
			t.Errorf("%s is on main %d times:\n%s", name, n, log)
		}
	}
	if left := f.git(f.remote, "for-each-ref", "refs/refretry/"); left != "" {
		t.Errorf("left on the remote:\n%s", left)
	}
	t.Logf("take-overs: %d", strings.Count(strings.Join(outs, ""), "taking it over"))
}

// TestGatherLogRecords: a job gathering alone makes three pushes (it stages its
// commit and takes the lease in one, lands the wave and lets the lease go), and its JSON log has
// an attempt record for each, in order and numbered on, each final (no push is
// retried) and none failed, and a summary that counts them; plain stderr says nothing
// of them. In GitHub format that success is no warning: nothing was retried.
func TestGatherLogRecords(t *testing.T) {
	t.Parallel()
	f := newGatherFixture(t, testutil.NewGit(t))
	wrapper, pushLog, logFile := f.killingGit(), filepath.Join(f.root, "pushes"), filepath.Join(f.root, "log.jsonl")
	code, out := f.refretry(f.clone("job"), wrapper, []string{"PUSH_LOG=" + pushLog},
		"--log-file", logFile, "push", "--gather", "origin", "HEAD:main")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	pushes, err := os.ReadFile(pushLog)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Fields(string(pushes)), []string{"stage", "wave", "lease"}; !slices.Equal(got, want) {
		t.Fatalf("the job's pushes were %q, want %q", got, want)
	}
	b, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	var attempts []string
	var summary map[string]any
	for _, rec := range jsonLines(t, string(b)) {
		switch rec["msg"] {
		case "attempt":
			attempts = append(attempts, fmt.Sprint(rec["attempt"], " final=", rec["final"], " class=", rec["class"], " exit=", rec["exit_code"]))
		case "summary":
			summary = rec
		}
	}
	want := []string{"1 final=true class=<nil> exit=0", "2 final=true class=<nil> exit=0", "3 final=true class=<nil> exit=0"}
	if !slices.Equal(attempts, want) {
		t.Errorf("attempt records %q, want %q (one a push)\n%s", attempts, want, b)
	}
	if summary["result"] != "success" || summary["attempts"] != 3.0 || summary["level"] != "INFO" {
		t.Errorf("summary %v: want a success of 3 attempts, at level INFO", summary)
	}
	if strings.Contains(out, "attempt") {
		t.Errorf("plain stderr names an attempt:\n%s", out)
	}

	code, out = f.refretry(f.clone("github"), f.g.Path, nil, "--log-format=github", "push", "--gather", "origin", "HEAD:main")
	if code != 0 {
		t.Fatalf("github: exit %d\n%s", code, out)
	}
	if !strings.Contains(out, "refretry: push succeeded after 3 attempts") || strings.Contains(out, "::warning") {
		t.Errorf("github: want a plain line of 3 attempts and no warning:\n%s", out)
	}
}

// gatherFixture is a bare remote with two commits on main, a clone of it (seed), and
// the means to make more clones with a result commit each and to run refretry in them.
type gatherFixture struct {
	t            *testing.T
	g            testutil.Git
	root, remote string
	url          string // how the clones reach the remote (file:// unless a test serves it)
	seed         string
	env          []string
}

func newGatherFixture(t *testing.T, g testutil.Git) *gatherFixture {
	t.Helper()
	root := t.TempDir()
	f := &gatherFixture{t: t, g: g, root: root, remote: filepath.Join(root, "r.git"), seed: filepath.Join(root, "seed"),
		env: testutil.NoMaintenanceEnv(t, root)}
	f.url = "file://" + f.remote
	f.git(root, "init", "-q", "--bare", "-b", "main", f.remote)
	f.git(root, "init", "-q", "-b", "main", f.seed)
	f.git(f.seed, "commit", "-q", "--allow-empty", "-m", "seed")
	f.git(f.seed, "commit", "-q", "--allow-empty", "-m", "seed 2")
	f.git(f.seed, "push", "-q", "file://"+f.remote, "main")
	return f
}

// git runs git in dir and returns its trimmed output; a failure ends the test.
func (f *gatherFixture) git(dir string, args ...string) string {
	f.t.Helper()
	cmd := exec.Command(f.g.Path, args...)
	cmd.Dir, cmd.Env = dir, f.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		f.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// clone makes a depth-1 clone named name, detached as a pull_request checkout is,
// with one commit adding the file name.
func (f *gatherFixture) clone(name string) string {
	f.t.Helper()
	dir := filepath.Join(f.root, name)
	f.git(f.root, "clone", "-q", "--depth=1", f.url, dir)
	f.git(dir, "checkout", "-q", "--detach")
	if err := os.WriteFile(filepath.Join(dir, name), []byte(name), 0o644); err != nil {
		f.t.Fatal(err)
	}
	f.git(dir, "add", name)
	f.git(dir, "commit", "-q", "-m", "result of "+name)
	return dir
}

// command is refretry in dir, running git (REAL_GIT is the real one, for killingGit).
func (f *gatherFixture) command(dir, git string, extra []string, args ...string) *exec.Cmd {
	cmd := exec.Command(binary, args...)
	cmd.Dir = dir
	cmd.Env = append(append(f.env, "REFRETRY_GIT="+git, "REAL_GIT="+f.g.Path), extra...)
	return cmd
}

// refretry runs refretry in dir and returns its exit code (128+n for a death by
// signal n) and its combined output.
func (f *gatherFixture) refretry(dir, git string, extra []string, args ...string) (int, string) {
	cmd := f.command(dir, git, extra, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	return childExit(cmd.Run()), out.String()
}

// killingGit writes killingGit to the fixture and returns its path.
func (f *gatherFixture) killingGit() string {
	wrapper := filepath.Join(f.root, "killing-git")
	if err := os.WriteFile(wrapper, []byte(killingGit), 0o755); err != nil {
		f.t.Fatal(err)
	}
	return wrapper
}

// stagedThenLooked waits until staged reports true and then a look at the remote
// (killingGit's LOOK_LOG, the file looks) ends: a job that has staged and then seen
// the lease held waits for the lease. It reports false if that took longer than limit.
func stagedThenLooked(staged func() bool, looks string, limit time.Duration) bool {
	looked := func() int { b, _ := os.ReadFile(looks); return bytes.Count(b, []byte("\n")) }
	seen := -1 // the looks ended by the time it was seen to have staged
	for deadline := time.Now().Add(limit); seen < 0 || looked() <= seen; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			return false
		}
		if seen < 0 && staged() {
			seen = looked()
		}
	}
	return true
}

// TestGatherSIGTERM: a job (`push --gather`) and `refretry gather land`, each waiting
// for another gather's lease, stop at SIGTERM, exit as a shell reports it (143, not a
// bare death by signal), say that the signal stopped them (not their budget), and leave
// what was staged staged: nothing lands and no gather ref goes. Each is signalled once
// it has been seen to look at the remote (killingGit's LOOK_LOG), not after a guessed
// time.
func TestGatherSIGTERM(t *testing.T) {
	t.Parallel()
	f := newGatherFixture(t, testutil.NewGit(t))
	// A job killed once it holds the lease leaves its commit staged and the lease
	// held for the default 30 s.
	dead := f.clone("dead")
	if code, out := f.refretry(dead, f.killingGit(), []string{"KILL_STEP=stage", "KILL_WHEN=after"},
		"push", "--gather", "origin", "HEAD:main"); code != 137 {
		t.Fatalf("the job was not killed: exit %d\n%s", code, out)
	}
	gatherRefs := func() string { return f.git(f.remote, "for-each-ref", "--format=%(refname)", "refs/refretry/") }
	before := gatherRefs()
	if strings.Count(before, "refs/refretry/gather/") != 1 || !strings.Contains(before, "refs/refretry/lease/") {
		t.Fatalf("want one staged commit and a held lease on the remote, have:\n%s", before)
	}
	wrapper := f.killingGit()
	for i, tc := range []struct {
		name, dir string
		args      []string
		staged    int    // gather refs it adds
		last      string // how its output ends
	}{
		{"push --gather", f.clone("waiter"), []string{"push", "--gather", "origin", "HEAD:main"}, 1,
			"(context canceled); it stays staged and lands with the next gather\n"},
		{"gather land", f.seed, []string{"gather", "land", "file://" + f.remote, "main"}, 0,
			"refretry: stopped by a signal; what is still staged stays staged for the next gather\n"},
	} {
		before := gatherRefs()
		looks := filepath.Join(f.root, fmt.Sprintf("looks-%d", i))
		cmd := f.command(tc.dir, wrapper, []string{"LOOK_LOG=" + looks}, tc.args...)
		var out syncBuffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Well inside the lease's 30 s.
		if !stagedThenLooked(func() bool {
			return strings.Count(gatherRefs(), "refs/refretry/gather/") >= strings.Count(before, "refs/refretry/gather/")+tc.staged
		}, looks, 20*time.Second) {
			t.Fatalf("%s did not stage and then look at the remote in 20 s:\n%s", tc.name, out.String())
		}
		cmd.Process.Signal(syscall.SIGTERM)
		err := cmd.Wait()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 143 {
			t.Fatalf("%s: %v, want exit 143\n%s", tc.name, err, out.String())
		}
		if !strings.HasSuffix(out.String(), tc.last) {
			t.Errorf("%s said %q; want it to end with %q", tc.name, out.String(), tc.last)
		}
		if after := gatherRefs(); strings.Count(after, "refs/refretry/gather/") != strings.Count(before, "refs/refretry/gather/")+tc.staged ||
			!strings.Contains(after, "refs/refretry/lease/") {
			t.Errorf("after %s, the remote's gather refs are\n%s\nwant those before\n%s\nand %d staged", tc.name, after, before, tc.staged)
		}
		if log := f.git(f.remote, "log", "--format=%s", "main"); strings.Contains(log, "result of") {
			t.Errorf("landed while the lease was held:\n%s", log)
		}
	}
}
