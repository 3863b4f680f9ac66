package gather_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/refretry/refretry/gather"
	"github.com/refretry/refretry/internal/harness/fakegit/fakegittest"
	"github.com/refretry/refretry/internal/harness/sharedclock"
	"github.com/refretry/refretry/internal/harness/testutil"
	"github.com/refretry/refretry/retry"
	"github.com/refretry/refretry/settings"
)

// remote is a bare repository with main, reached over file://.
type remote struct {
	t   *testing.T
	g   testutil.Git
	dir string
	env []string
	job string // a job's work tree before its commit, which newJob copies
}

// newRemote is a copy of the remote seeded with files, and of a job's clone of it,
// built once per test binary for each git and seed (buildRemote).
func newRemote(t *testing.T, g testutil.Git, files map[string]string) *remote {
	t.Helper()
	// fmt prints a map sorted by key: one key for one seed.
	root, builtIn, _ := remotes.Copy(t, g.Path+"\x00"+fmt.Sprint(files), func(t testing.TB, dir string) struct{} {
		buildRemote(t, g, files, dir)
		return struct{}{}
	})
	r := &remote{t: t, g: g, dir: filepath.Join(root, "r.git"), env: testutil.NoMaintenanceEnv(t, root), job: filepath.Join(root, "job", "w")}
	testutil.Relocate(t, filepath.Join(r.job, ".git", "config"), builtIn, root)
	return r
}

// remotes holds the seeded remotes and their job clones as newRemote hands them out.
var remotes testutil.Starts[struct{}]

// buildRemote makes, under root, the bare remote r.git with main seeded with files
// (its seed repository beside it) and, under job, a job's work tree: a depth-1 clone
// of main, detached.
func buildRemote(t testing.TB, g testutil.Git, files map[string]string, root string) {
	t.Helper()
	dir, env := filepath.Join(root, "r.git"), testutil.NoMaintenanceEnv(t, root)
	run(t, g, root, env, "init", "-q", "--bare", "-b", "main", dir)
	seed := filepath.Join(root, "seed")
	run(t, g, root, env, "init", "-q", "-b", "main", seed)
	for name, content := range files {
		write(t, filepath.Join(seed, name), content)
	}
	write(t, filepath.Join(seed, "README"), "seed\n")
	run(t, g, seed, env, "add", ".")
	run(t, g, seed, env, "commit", "-q", "-m", "seed")
	run(t, g, seed, env, "commit", "-q", "--allow-empty", "-m", "second") // so that depth 1 cuts
	run(t, g, seed, env, "push", "-q", "file://"+dir, "main")
	jobRoot := filepath.Join(root, "job")
	if err := os.Mkdir(jobRoot, 0o755); err != nil {
		t.Fatal(err)
	}
	w, jobEnv := filepath.Join(jobRoot, "w"), testutil.NoMaintenanceEnv(t, jobRoot)
	run(t, g, jobRoot, jobEnv, "clone", "-q", "--depth=1", "--branch=main", "file://"+dir, w)
	run(t, g, w, jobEnv, "checkout", "-q", "--detach")
}

// refs is the remote's refs under prefix.
func (r *remote) refs(prefix string) map[string]string {
	out := run(r.t, r.g, r.dir, r.env, "for-each-ref", "--format=%(refname) %(objectname)", prefix)
	m := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if ref, oid, ok := strings.Cut(line, " "); ok {
			m[ref] = oid
		}
	}
	return m
}

// job is a CI job's work tree: a depth-1 clone of main, detached.
type job struct {
	dir string
	env []string
}

// newJob is a copy of the remote's job clone with a commit of files on it.
func newJob(t *testing.T, r *remote, name string, files map[string]string) job {
	t.Helper()
	root := t.TempDir()
	j := job{dir: filepath.Join(root, "w"), env: testutil.NoMaintenanceEnv(t, root)}
	if err := os.CopyFS(j.dir, os.DirFS(r.job)); err != nil {
		t.Fatal(err)
	}
	for path, content := range files {
		write(t, filepath.Join(j.dir, path), content)
	}
	run(t, r.g, j.dir, j.env, "add", "-A")
	run(t, r.g, j.dir, j.env, "commit", "-q", "-m", "result of "+name)
	return j
}

func (j job) runner(r *remote, configure func(*gather.Runner)) *gather.Runner {
	gr := &gather.Runner{
		Config: settings.Config{
			Git:  r.g.Path,
			Dirs: []string{j.dir},
			Env:  j.env,
			Settings: func() (settings.Settings, error) {
				return settings.Settings{Policy: retry.Policy{Timeout: 2 * time.Minute, MaxAttempts: 10, InitialDelay: time.Millisecond,
					MaxDelay: 50 * time.Millisecond, Multiplier: 2, Jitter: 0.5}}, nil
			},
		},
	}
	if configure != nil {
		configure(gr)
	}
	return gr
}

type outcome struct {
	res gather.Result
	err error
}

// pushArgs are the git push arguments every job's gather lands: its HEAD on main.
var pushArgs = []string{"origin", "main"}

// fakeTime gives a Runner a clock of its own that never sleeps: a wait advances it
// at once (fakegittest.Clock). It starts at the real time, which the staged ids
// carry. For a job whose waits are timeouts (a lease's, the budget's) and for one
// that runs alone; jobs that wait for each other's real pushes share a clock
// (together), for clocks of their own would make their looks at the remote a busy
// loop.
func fakeTime(gr *gather.Runner) { gr.Clock = fakegittest.NewClockAt(time.Now()) }

// all runs every job's gather at once.
func all(jobs []job, r *remote, configure func(*gather.Runner)) []outcome {
	return runJobs(jobs, r, func(_ int, gr *gather.Runner) {
		if configure != nil {
			configure(gr)
		}
	}, func() {})
}

// together runs every job's gather at once, the jobs waiting for each other's real
// pushes on one shared clock (sharedclock): it starts at the real time, which the
// staged ids carry, and passes only while every job waits, so that a waiter looks at
// the remote once a wait of its has passed on that clock, however long the real
// pushes take, and no job sleeps on real time. configure sets job i's Runner.
func together(t *testing.T, jobs []job, r *remote, configure func(i int, gr *gather.Runner)) []outcome {
	t.Helper()
	start := time.Now()
	clock := sharedclock.New(start, len(jobs))
	out := runJobs(jobs, r, func(i int, gr *gather.Runner) {
		gr.Clock = clock
		if configure != nil {
			configure(i, gr)
		}
	}, clock.Leave)
	// Every job that staged waited before its first look: on the shared clock, or
	// the test would not be what it says.
	if clock.Waits() == 0 || !clock.Now().After(start) {
		t.Errorf("the jobs made %d waits on the shared clock, which is %v past its start", clock.Waits(), clock.Now().Sub(start))
	}
	return out
}

// runJobs runs every job's gather at once, job i's Runner set by configure, and calls
// done as each one ends.
func runJobs(jobs []job, r *remote, configure func(i int, gr *gather.Runner), done func()) []outcome {
	out := make([]outcome, len(jobs))
	var wg sync.WaitGroup
	for i, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer done()
			gr := j.runner(r, func(gr *gather.Runner) { configure(i, gr) })
			out[i].res, out[i].err = gr.Run(context.Background(), pushArgs, nil, nil, nil)
		}()
	}
	wg.Wait()
	return out
}

// checkClean wants no staged, lease or conflict refs left on the remote.
func checkClean(t *testing.T, r *remote) {
	t.Helper()
	if left := r.refs("refs/refretry/"); len(left) != 0 {
		t.Errorf("refretry refs left on the remote: %v", left)
	}
}

// TestGatherLands: jobs with a file each, and jobs appending to one line file under
// merge=union (8 of each; 4 by default), all land, each commit once on main with its
// author, message and the gather trailer, and the remote keeps nothing of the gather's.
func TestGatherLands(t *testing.T) {
	t.Parallel()
	g := testutil.NewGit(t)
	n := testutil.Scale(t, 4, 8)
	for _, mode := range []string{"files", "union"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			seedFiles := map[string]string{}
			if mode == "union" {
				seedFiles[".gitattributes"] = "results.csv merge=union\n"
				seedFiles["results.csv"] = "job,value\n"
			}
			r := newRemote(t, g, seedFiles)
			jobs := make([]job, n)
			for i := range jobs {
				files := map[string]string{fmt.Sprintf("results/job-%02d.txt", i): fmt.Sprint(i)}
				if mode == "union" {
					files = map[string]string{"results.csv": fmt.Sprintf("job,value\njob-%02d,%d\n", i, i)}
				}
				jobs[i] = newJob(t, r, fmt.Sprintf("job-%02d", i), files)
			}
			outs := together(t, jobs, r, nil)
			gathered, pushes := 0, 0
			for i, o := range outs {
				if o.err != nil || !o.res.Landed {
					t.Errorf("job %d: landed %v, err %v", i, o.res.Landed, o.err)
				}
				gathered += o.res.Gathered
				pushes += o.res.Pushes
			}
			if gathered != n {
				t.Errorf("gathers landed %d commits in all, want %d", gathered, n)
			}
			log := run(t, g, r.dir, r.env, "log", "--format=%s|%an|%(trailers:key=Refretry-Gather,valueonly,separator=)", "main")
			for i := range n {
				if c := strings.Count(log, fmt.Sprintf("result of job-%02d|A U Thor|", i)); c != 1 {
					t.Errorf("job-%02d's commit is on main %d times:\n%s", i, c, log)
				}
			}
			if mode == "union" {
				content := run(t, g, r.dir, r.env, "show", "main:results.csv")
				for i := range n {
					if c := strings.Count(content+"\n", fmt.Sprintf("job-%02d,%d\n", i, i)); c != 1 {
						t.Errorf("job-%02d's line is in results.csv %d times:\n%s", i, c, content)
					}
				}
			}
			checkClean(t, r)
			t.Logf("%d jobs: %d pushes in all", n, pushes)
		})
	}
}

// TestGatherConflict: two jobs change the same line; one lands, the other fails alone
// with a *ConflictError naming the file, and nothing of its is left on the remote.
func TestGatherConflict(t *testing.T) {
	t.Parallel()
	g := testutil.NewGit(t)
	r := newRemote(t, g, map[string]string{"version": "1\n"})
	jobs := []job{
		newJob(t, r, "a", map[string]string{"version": "2\n"}),
		newJob(t, r, "b", map[string]string{"version": "3\n"}),
		newJob(t, r, "c", map[string]string{"other": "c\n"}),
	}
	outs := together(t, jobs, r, nil)
	landed, conflicts := 0, 0
	for i, o := range outs {
		var ce *gather.ConflictError
		switch {
		case o.err == nil && o.res.Landed:
			landed++
		case errors.As(o.err, &ce):
			conflicts++
			if i == 2 || len(ce.Paths) != 1 || ce.Paths[0] != "version" {
				t.Errorf("job %d: %v (paths %v)", i, o.err, ce.Paths)
			}
		default:
			t.Errorf("job %d: landed %v, err %v", i, o.res.Landed, o.err)
		}
	}
	if landed != 2 || conflicts != 1 {
		t.Errorf("%d landed, %d conflicts; want 2 and 1", landed, conflicts)
	}
	checkClean(t, r)
}

// TestGatherFanInConflict: a fan-in's jobs stage and exit (NoWait), and the land
// that follows lands what replays and fails, naming the conflict refs, for what does
// not: in a fan-in no job is left to take its own conflict, so a land that exited 0
// would lose it.
func TestGatherFanInConflict(t *testing.T) {
	t.Parallel()
	g := testutil.NewGit(t)
	r := newRemote(t, g, map[string]string{"version": "1\n"})
	jobs := []job{
		newJob(t, r, "a", map[string]string{"version": "2\n"}),
		newJob(t, r, "b", map[string]string{"version": "3\n"}),
	}
	for i, j := range jobs {
		res, err := j.runner(r, func(gr *gather.Runner) { gr.NoWait = true }).Run(context.Background(), pushArgs, nil, nil, nil)
		if err != nil || res.ExitCode != 0 || res.Landed || res.ID == "" {
			t.Fatalf("job %d: %+v, %v; want staged and exit 0, not landed", i, res, err)
		}
	}
	res, err := jobs[0].runner(r, fakeTime).Land(context.Background(), "origin", "main", nil)
	var left *gather.LeftError
	if !errors.As(err, &left) || len(left.Refs) != 1 || res.Gathered != 1 || len(res.Conflicts) != 1 ||
		!strings.HasPrefix(left.Refs[0], "refs/refretry/conflict/main/") {
		t.Fatalf("land: %+v, %v; want one landed and a *LeftError naming one conflict ref", res, err)
	}
	if refs := r.refs("refs/refretry/conflict/"); len(refs) != 1 {
		t.Errorf("conflict refs on the remote: %v, want the one the error names", refs)
	}
}

// TestGatherAbandoned: a job killed after staging still lands (the next job's gather
// takes its commit), and a lease whose holder died is taken over once it has not
// changed for LeaseTimeout.
func TestGatherAbandoned(t *testing.T) {
	t.Parallel()
	g := testutil.NewGit(t)
	r := newRemote(t, g, nil)
	dead := newJob(t, r, "dead", map[string]string{"dead.txt": "d"})
	deadCommit := run(t, g, dead.dir, dead.env, "rev-parse", "HEAD")
	// The dead job staged, took the lease, and was killed.
	run(t, g, dead.dir, dead.env, "push", "-q", "origin",
		"HEAD:refs/refretry/gather/main/00000000-0000-7000-8000-000000000001", "HEAD:refs/refretry/lease/main")
	live := newJob(t, r, "live", map[string]string{"live.txt": "l"})
	clock := fakegittest.NewClockAt(time.Now())
	o := all([]job{live}, r, func(gr *gather.Runner) {
		gr.Clock, gr.Rand, gr.LeaseTimeout = clock, func() float64 { return 0 }, 500*time.Millisecond
	})[0]
	if o.err != nil || !o.res.Landed || o.res.Gathered != 2 {
		t.Fatalf("landed %v, gathered %d, err %v", o.res.Landed, o.res.Gathered, o.err)
	}
	// Every wait was the job's clock's, jittered by its Rand: the first look 100 ms
	// after staging (the least, as the staging push took no time on that clock), then
	// looks 340 ms apart (what a gather takes to reach the second staged commit: 300 ms
	// and 20 ms a commit) at the least of their ±50 % (Rand 0), so the lease, seen
	// unchanged since the first look, has been for more than 500 ms at the fourth.
	want := []time.Duration{100 * time.Millisecond, 170 * time.Millisecond, 170 * time.Millisecond, 170 * time.Millisecond}
	if got := clock.Slept(); !slices.Equal(got, want) {
		t.Errorf("the job waited %v on its clock; want %v", got, want)
	}
	log := run(t, g, r.dir, r.env, "log", "--format=%s", "main")
	if !strings.Contains(log, "result of dead\n") || !strings.Contains(log, "result of live\n") {
		t.Errorf("main:\n%s", log)
	}
	if got := run(t, g, r.dir, r.env, "log", "-1", "--format=%(trailers:key=Refretry-Gather,valueonly)", "main~1"); got != "00000000-0000-7000-8000-000000000001" {
		t.Errorf("the dead job's commit (%s) is not first, with its id: %q", deadCommit, got)
	}
	checkClean(t, r)
}

// TestGatherRacingGatherers: with a lease that times out at once, waiters take it
// over from each other all the time, so gathers race (and may starve each other: a
// lease must outlast a gather). Whatever happened in the 3 s that 6 jobs get (by
// default 1 s and 3 jobs; on clocks of their own that do not sleep, so about ten
// looks a second each: only waits count, not the real time git takes), no commit is
// on main twice, a job that says it landed is on main, and one that did not is still
// staged (or landed since, by a gather under way); a gather with the default lease
// then lands the rest, each once.
func TestGatherRacingGatherers(t *testing.T) {
	t.Parallel()
	g := testutil.NewGit(t)
	n, budget := testutil.Scale(t, 3, 6), time.Duration(testutil.Scale(t, 1, 3))*time.Second
	r := newRemote(t, g, nil)
	jobs := make([]job, n)
	for i := range jobs {
		jobs[i] = newJob(t, r, fmt.Sprintf("job-%d", i), map[string]string{fmt.Sprintf("f%d", i): "x"})
	}
	outs := all(jobs, r, func(gr *gather.Runner) {
		fakeTime(gr)
		gr.LeaseTimeout = time.Nanosecond
		gr.Settings = func() (settings.Settings, error) {
			return settings.Settings{Policy: retry.Policy{Timeout: budget, MaxAttempts: 10, InitialDelay: time.Millisecond,
				MaxDelay: 50 * time.Millisecond, Multiplier: 2, Jitter: 0.5}}, nil
		}
	})
	log := run(t, g, r.dir, r.env, "log", "--format=%s", "main")
	staged := r.refs("refs/refretry/gather/")
	for i, o := range outs {
		on := strings.Count(log+"\n", fmt.Sprintf("result of job-%d\n", i))
		var nl *gather.NotLandedError
		switch {
		case on > 1:
			t.Errorf("job-%d is on main %d times", i, on)
		case o.err == nil && o.res.Landed && on != 1:
			t.Errorf("job-%d says it landed, but is not on main", i)
		case errors.As(o.err, &nl) && on == 0 && staged[nl.Ref] == "":
			// Not landed when the job gave up: still staged, or landed by a gather
			// that was under way (on main once).
			t.Errorf("job-%d did not land, and its commit is neither staged nor on main", i)
		case o.err != nil && !errors.As(o.err, &nl):
			t.Errorf("job-%d: %v", i, o.err)
		}
	}
	last := newJob(t, r, "last", map[string]string{"last": "x"})
	if o := all([]job{last}, r, fakeTime)[0]; o.err != nil || !o.res.Landed {
		t.Fatalf("the last job: %+v %v", o.res, o.err)
	}
	log = run(t, g, r.dir, r.env, "log", "--format=%s", "main")
	for i := range n {
		if c := strings.Count(log+"\n", fmt.Sprintf("result of job-%d\n", i)); c != 1 {
			t.Errorf("in the end, job-%d is on main %d times:\n%s", i, c, log)
		}
	}
	checkClean(t, r)
}

// TestGatherSeveralCommits: a job with two commits lands them as one; a job whose
// commit is on main already lands at once, staging nothing.
func TestGatherSeveralCommits(t *testing.T) {
	t.Parallel()
	g := testutil.NewGit(t)
	r := newRemote(t, g, nil)
	j := newJob(t, r, "one", map[string]string{"a": "1"})
	write(t, filepath.Join(j.dir, "b"), "2")
	run(t, g, j.dir, j.env, "add", "b")
	run(t, g, j.dir, j.env, "commit", "-q", "-m", "two")
	o := all([]job{j}, r, fakeTime)[0]
	if o.err != nil || !o.res.Landed {
		t.Fatalf("landed %v, err %v", o.res.Landed, o.err)
	}
	if files := run(t, g, r.dir, r.env, "ls-tree", "--name-only", "main"); files != "README\na\nb" {
		t.Errorf("main has %q", files)
	}
	if subject := run(t, g, r.dir, r.env, "log", "-1", "--format=%s", "main"); subject != "two" {
		t.Errorf("main's tip is %q", subject)
	}
	again := job{dir: j.dir, env: j.env}
	run(t, g, j.dir, j.env, "fetch", "-q", "origin", "main")
	run(t, g, j.dir, j.env, "checkout", "-q", "--detach", "FETCH_HEAD")
	o = all([]job{again}, r, fakeTime)[0]
	if o.err != nil || !o.res.Landed || o.res.ID != "" || o.res.Pushes != 0 {
		t.Errorf("already on main: %+v, err %v", o.res, o.err)
	}
	checkClean(t, r)
}

func run(t testing.TB, g testutil.Git, dir string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command(g.Path, args...)
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

func write(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestGatherMixedKeys: jobs of two pipelines, with keys A and B, gather onto one
// branch at once. A gatherer lands only its own pipeline's commits, so a job whose
// commit another pipeline's gatherer leaves staged takes the lease when that
// gatherer lets it go and lands its commit itself: every job lands, each commit once
// (6 jobs, 3 of each pipeline; by default 4, 2 of each). A job with a key too short
// for use stages nothing.
func TestGatherMixedKeys(t *testing.T) {
	t.Parallel()
	g := testutil.NewGit(t)
	r := newRemote(t, g, nil)
	n := testutil.Scale(t, 4, 6)
	keys := [][]byte{[]byte("pipeline-A-0123456789"), []byte("pipeline-B-0123456789")}
	jobs := make([]job, n)
	for i := range jobs {
		jobs[i] = newJob(t, r, fmt.Sprintf("job-%d", i), map[string]string{fmt.Sprintf("f%d", i): "x"})
	}
	outs := together(t, jobs, r, func(i int, gr *gather.Runner) { gr.Key = keys[i%2] })
	log := run(t, g, r.dir, r.env, "log", "--format=%s", "main")
	for i, o := range outs {
		if o.err != nil || !o.res.Landed {
			t.Errorf("job-%d (key %d): landed %v, err %v", i, i%2, o.res.Landed, o.err)
		}
		if c := strings.Count(log+"\n", fmt.Sprintf("result of job-%d\n", i)); c != 1 {
			t.Errorf("job-%d is on main %d times:\n%s", i, c, log)
		}
	}
	owner := map[string]int{}
	for i, o := range outs {
		owner[o.res.ID] = i
	}
	refused := 0
	for i, o := range outs {
		for _, id := range o.res.Refused {
			refused++
			if j, ok := owner[id]; !ok || j%2 == i%2 {
				t.Errorf("job-%d (key %d) refused %s, which is not another pipeline's", i, i%2, id)
			}
		}
	}
	checkClean(t, r)
	t.Logf("%d refusals of another pipeline's commit", refused)

	short := newJob(t, r, "short", map[string]string{"s": "x"})
	_, err := short.runner(r, func(gr *gather.Runner) { gr.Key = []byte("short") }).Run(context.Background(), pushArgs, nil, nil, nil)
	var ke *gather.KeyError
	if !errors.As(err, &ke) || ke.Len != 5 {
		t.Errorf("a 5-byte key: %v, want a *KeyError", err)
	}
	checkClean(t, r)
}
