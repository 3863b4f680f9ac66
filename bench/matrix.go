package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The matrix phase: N CI matrix jobs, each a depth-1 clone of main with one
// commit of its result, released at once to push that result to main (or,
// for the floor, to a branch of its own). See README.md, "(d) Matrix".

// matrixMode is what each job writes, and so where its result is found.
type matrixMode struct {
	name   string
	label  string
	shared bool // every job appends its line to results.csv; else each writes its own file
	union  bool // .gitattributes says results.csv merge=union
}

// matrixModes are the modes in report order; -matrix-modes selects among them.
var matrixModes = []matrixMode{
	{name: "files", label: "each job writes its own file, `results/job-NNN.txt`"},
	{name: "shared", label: "each job appends its line `job-NNN,<value>` to `results.csv`", shared: true},
	{name: "union", label: "each job appends its line to `results.csv`, which `.gitattributes` marks `merge=union`", shared: true, union: true},
}

// matrixCheckouts are the checkout forms -matrix-checkout takes: what the job
// has checked out, and what its push names.
var matrixCheckouts = []struct{ name, label string }{
	{"branch", "on branch `main`, pushing `HEAD:main`"},
	{"detached", "detached HEAD (a `pull_request` checkout), pushing `HEAD:main`"},
	{"sha", "detached HEAD, pushing `<sha>:refs/heads/main` (the loop and the queue evaluate `$(git rev-parse HEAD)` at each push)"},
}

// matrixJob is one job of a trial, as its method sees it.
type matrixJob struct {
	index int
	name  string // job-NNN
	dir   string // its clone
	value string // its result
	// src is what its push names as the source: HEAD, or its commit's id
	// in the sha checkout form; shellSrc is the same for a shell script,
	// which must name the commit it has after a rebase.
	src, shellSrc string
	dst           string // the destination of a push to main: main or refs/heads/main
	regen         string // the idempotent command that writes its result again
	lock          string // the queue's lock file, shared by the jobs of a trial
}

// line is the job's line in results.csv.
func (j matrixJob) line() string { return j.name + "," + j.value }

// file is the job's own file in the files mode.
func (j matrixJob) file() string { return "results/" + j.name + ".txt" }

// mainSpec is the refspec of its push to main; shell for a shell script.
func (j matrixJob) mainSpec(shell bool) string {
	if shell {
		return j.shellSrc + ":" + j.dst
	}
	return j.src + ":" + j.dst
}

// matrixTools are the programs the methods run.
type matrixTools struct {
	git, refretry, sh, flock string
	pushTimeout              time.Duration // passed to refretry as --timeout; 0: not passed
}

// matrixMethod is one way for the N jobs to push their result. Adding a
// method is adding one entry to matrixMethods.
type matrixMethod struct {
	name  string // short and stable, for -matrix-methods, the ratios and the charts
	label string // what each job runs, for the report
	argv  func(t matrixTools, j matrixJob) []string
	// ownBranch: the job pushes to refs/heads/<job name>, where its result
	// is looked for, instead of main.
	ownBranch bool
	needs     string   // a tool besides git, sh and refretry: "flock"
	env       []string // added to the jobs' environment (and the land's)
	// land, when set, is one more command (a fan-in job), run in job-000's
	// clone once every job has exited. The trial's wall time runs until it
	// has exited, and a job counts as exited 0 only when the land did too:
	// a job's own exit 0 says only that its commit is staged.
	land     func(t matrixTools) []string
	compare  bool   // refretry's: the numerator of the ratios
	against  string // a refretry method it is also compared with (gather: rebase)
	baseline bool   // what users do instead: a denominator of the ratios
}

// loopTries is the most pushes the users' loop makes.
const loopTries = 20

func refretryArgv(t matrixTools, extra ...string) []string {
	return refretryCommand(t, append([]string{"push"}, extra...)...)
}

// refretryCommand is refretry with args, and --timeout when -matrix-push-timeout gives one.
func refretryCommand(t matrixTools, args ...string) []string {
	argv := []string{t.refretry}
	if t.pushTimeout > 0 {
		argv = append(argv, "--timeout", t.pushTimeout.String())
	}
	return append(argv, args...)
}

// gatherEnv is the gather key the gather methods' jobs share, as the Action and
// the component require one.
var gatherEnv = []string{"REFRETRY_GATHER_KEY=refretry-bench-gather-key"}

// matrixMethods are the methods in report order.
var matrixMethods = []matrixMethod{
	{name: "git", label: "`git push origin HEAD:main`, one try",
		argv: func(t matrixTools, j matrixJob) []string { return []string{t.git, "push", "origin", j.mainSpec(false)} }},
	{name: "loop", label: fmt.Sprintf("`until git push origin HEAD:main; do` at most %d tries, `git pull --rebase origin main` between them (sh)", loopTries),
		argv: func(t matrixTools, j matrixJob) []string {
			script := fmt.Sprintf("n=0; until git push origin %s; do n=$((n+1)); [ $n -ge %d ] && exit 1; git pull --rebase origin main || exit 1; done",
				j.mainSpec(true), loopTries)
			return []string{t.sh, "-c", script}
		}, baseline: true},
	{name: "queue", label: "a job-level queue (a `concurrency` group with `queue: max`): `flock` on a shared file around `git pull --rebase origin main && git push origin HEAD:main`",
		argv: func(t matrixTools, j matrixJob) []string {
			return []string{t.flock, j.lock, t.sh, "-c", "git pull --rebase origin main && git push origin " + j.mainSpec(true)}
		}, needs: "flock", baseline: true},
	{name: "rebase", label: "`refretry push --rebase origin HEAD:main`",
		argv: func(t matrixTools, j matrixJob) []string {
			return refretryArgv(t, "--rebase", "origin", j.mainSpec(false))
		}, compare: true},
	{name: "regenerate", label: "`refretry push --regenerate '<cmd>' origin HEAD:main`, <cmd> writing the job's result again if it is not there",
		argv: func(t matrixTools, j matrixJob) []string {
			return refretryArgv(t, "--regenerate", j.regen, "origin", j.mainSpec(false))
		}, compare: true},
	{name: "gather", label: "`refretry push --gather origin HEAD:main` with a gather key (`REFRETRY_GATHER_KEY`, as the Action and the component require): stage, then one gatherer per wave lands every staged commit in one atomic push",
		argv: func(t matrixTools, j matrixJob) []string {
			return refretryArgv(t, "--gather", "origin", j.mainSpec(false))
		}, env: gatherEnv, compare: true, against: "rebase"},
	{name: "fanin", label: "a fan-in: `refretry push --gather --no-wait origin HEAD:main` with the gather key, which stages the commit and exits; once every job has exited, one more process in job-000's clone, `refretry gather land origin main` with the key, lands every staged commit (waves of up to 64); the wall time runs to its exit",
		argv: func(t matrixTools, j matrixJob) []string {
			return refretryArgv(t, "--gather", "--no-wait", "origin", j.mainSpec(false))
		},
		land: func(t matrixTools) []string {
			return refretryCommand(t, "gather", "land", "origin", "main")
		}, env: gatherEnv, compare: true, against: "gather"},
	{name: "floor", label: "`git push origin HEAD:refs/heads/job-NNN`: each job to a branch of its own, nothing to contend for",
		argv: func(t matrixTools, j matrixJob) []string {
			return []string{t.git, "push", "origin", j.src + ":refs/heads/" + j.name}
		}, ownBranch: true, baseline: true},
}

// matrixMethodNames are the methods' names, in report order.
func matrixMethodNames() []string {
	names := make([]string, len(matrixMethods))
	for i, m := range matrixMethods {
		names[i] = m.name
	}
	return names
}

func matrixModeNames() []string {
	names := make([]string, len(matrixModes))
	for i, m := range matrixModes {
		names[i] = m.name
	}
	return names
}

func matrixCheckoutNames() []string {
	names := make([]string, len(matrixCheckouts))
	for i, c := range matrixCheckouts {
		names[i] = c.name
	}
	return names
}

// matrixServerNames are the server kinds -matrix-servers takes.
var matrixServerNames = []string{"http", "gitea"}

// validateMatrix checks the matrix flags.
func (c config) validateMatrix() error {
	for _, check := range []struct {
		flag  string
		got   []string
		known []string
	}{
		{"-matrix-modes", c.matrix.modes, matrixModeNames()},
		{"-matrix-methods", c.matrix.methods, matrixMethodNames()},
		{"-matrix-servers", c.matrix.servers, matrixServerNames},
	} {
		if len(check.got) == 0 {
			return fmt.Errorf("%s must not be empty", check.flag)
		}
		for _, name := range check.got {
			if !slices.Contains(check.known, name) {
				return fmt.Errorf("%s: unknown name %q (known: %s)", check.flag, name, strings.Join(check.known, ","))
			}
		}
	}
	switch {
	case !slices.Contains(matrixCheckoutNames(), c.matrix.checkout):
		return fmt.Errorf("-matrix-checkout must be one of %s, not %q", strings.Join(matrixCheckoutNames(), ", "), c.matrix.checkout)
	case len(c.matrix.jobs) == 0:
		return errors.New("-matrix-jobs must not be empty")
	case c.matrix.pushTimeout < 0:
		return errors.New("-matrix-push-timeout must not be negative")
	case c.matrix.jobTimeout <= 0:
		return errors.New("-matrix-job-timeout must be positive")
	case c.matrix.trials < 0:
		return errors.New("the matrix trials must not be negative")
	}
	for i, rtt := range c.matrix.rtt {
		if rtt < 0 {
			return fmt.Errorf("-matrix-rtt: %s is negative", rtt)
		}
		if slices.Contains(c.matrix.rtt[:i], rtt) {
			return fmt.Errorf("-matrix-rtt: %s is named twice", rtt)
		}
	}
	return nil
}

// defaultRoundTrip is the forge's round trip of -matrix-latency without
// -matrix-rtt.
const defaultRoundTrip = 100 * time.Millisecond

// roundTrips are the round trips every server runs under, in order: the
// -matrix-rtt list when given (0 is the CPU-bound run, without a delay),
// defaultRoundTrip under -matrix-latency alone, else none (0).
func (m matrixConfig) roundTrips() []time.Duration {
	switch {
	case len(m.rtt) > 0:
		return m.rtt
	case m.latency:
		return []time.Duration{defaultRoundTrip}
	}
	return []time.Duration{0}
}

// trialsOfMatrix is the number of matrix trials: -trials, or 1 under -quick.
func (c config) trialsOfMatrix() int {
	if c.matrix.trials > 0 {
		return c.matrix.trials
	}
	return c.trials
}

// selectedMatrix returns the selected modes and methods, in report order.
func selectedMatrix(cfg config) ([]matrixMode, []matrixMethod) {
	modes := slices.DeleteFunc(slices.Clone(matrixModes), func(m matrixMode) bool { return !slices.Contains(cfg.matrix.modes, m.name) })
	methods := slices.DeleteFunc(slices.Clone(matrixMethods), func(m matrixMethod) bool { return !slices.Contains(cfg.matrix.methods, m.name) })
	return modes, methods
}

// matrixValue is job i's result: a number that differs from job to job.
func matrixValue(i int) string { return fmt.Sprintf("%d.%03d", (i*37)%100, (i*7919)%1000) }

func matrixJobName(i int) string { return fmt.Sprintf("job-%03d", i) }

// shellQuote quotes s for sh.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// regenCommand is the job's --regenerate command: it writes the job's result
// again on the remote's tip, and changes nothing when it is there already.
func regenCommand(mode matrixMode, name, value string) string {
	if mode.shared {
		line := shellQuote(name + "," + value)
		return "grep -qxF " + line + " results.csv || echo " + line + " >> results.csv"
	}
	return "mkdir -p results && printf '%s\\n' " + shellQuote(value) + " > " + shellQuote("results/"+name+".txt")
}

// matrixResult is one method in one trial.
type matrixResult struct {
	wall      time.Duration
	landed    int // jobs that exited 0 (for a method with a land: and the land too)
	timedOut  int // jobs (and the land) killed at -matrix-job-timeout
	check     resultCheck
	pushes    int           // receive-pack POSTs the server saw during the trial
	requests  int           // HTTP requests of every kind the server saw during the trial
	clientCPU time.Duration // the jobs (and the land) and their waited-for descendants, without the gates
	// serverCPU is the server's processes (see matrixServer.cpu); serverOK
	// says whether it could be read.
	serverCPU time.Duration
	serverOK  bool
	benchCPU  time.Duration // this process's own: the in-process HTTP server or proxy, the gate bookkeeping
	load      string        // the 1-minute load average just before the release
	firstErr  string        // the deciding line of the first failed job (or of the land)
	// land is the land's own share of the trial, for a method with one
	// (hasLand): its wall time from its release to its exit, and the pushes
	// and requests the server saw meanwhile.
	hasLand                  bool
	landWall                 time.Duration
	landPushes, landRequests int
}

// matrixEnv is the jobs' environment: the runner's, without the fixed
// identity (each clone has its own user.name and user.email, as a CI job
// sets them), and with the git under test first on PATH, where the jobs'
// shell scripts find it.
func matrixEnv(base []string, git string) []string {
	env := slices.DeleteFunc(slices.Clone(base), func(kv string) bool {
		for _, p := range []string{"GIT_AUTHOR_NAME=", "GIT_AUTHOR_EMAIL=", "GIT_COMMITTER_NAME=", "GIT_COMMITTER_EMAIL="} {
			if strings.HasPrefix(kv, p) {
				return true
			}
		}
		return false
	})
	path := filepath.Dir(git)
	for i, kv := range env {
		if old, ok := strings.CutPrefix(kv, "PATH="); ok {
			env[i] = "PATH=" + path + string(os.PathListSeparator) + old
			return env
		}
	}
	return append(env, "PATH="+path)
}

// matrixSetupWorkers bounds the clones made at once before a release.
const matrixSetupWorkers = 4

// setupJobs clones url n times under dir and commits each job's result.
func setupJobs(r *runner, cfg config, mode matrixMode, url, dir string, n int) ([]matrixJob, error) {
	jobs := make([]matrixJob, n)
	lock := filepath.Join(dir, "queue.lock")
	if err := os.WriteFile(lock, nil, 0o644); err != nil {
		return nil, err
	}
	errs := make([]error, n)
	sem := make(chan struct{}, matrixSetupWorkers)
	var wg sync.WaitGroup
	for i := range jobs {
		name, value := matrixJobName(i), matrixValue(i)
		jobs[i] = matrixJob{
			index: i, name: name, dir: filepath.Join(dir, name), value: value,
			src: "HEAD", shellSrc: "HEAD", dst: "main",
			regen: regenCommand(mode, name, value), lock: lock,
		}
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			errs[i] = setupJob(r, cfg.matrix.checkout, mode, url, &jobs[i])
		})
	}
	wg.Wait()
	return jobs, errors.Join(errs...)
}

// setupJob makes one job's clone as actions/checkout does (depth 1, branch
// main), gives it an identity, checks out the selected form and commits the
// job's result.
func setupJob(r *runner, checkout string, mode matrixMode, url string, j *matrixJob) error {
	git := r.git
	if _, err := r.output("", git, "clone", "--quiet", "--depth", "1", "--branch", "main", url, j.dir); err != nil {
		return err
	}
	if err := appendFile(filepath.Join(j.dir, ".git", "config"),
		fmt.Sprintf("[user]\n\tname = %s\n\temail = %s@example.com\n", j.name, j.name)); err != nil {
		return err
	}
	if checkout != "branch" {
		if _, err := r.output(j.dir, git, "checkout", "--quiet", "--detach"); err != nil {
			return err
		}
	}
	path := j.file()
	if mode.shared {
		path = "results.csv"
		if err := appendFile(filepath.Join(j.dir, path), j.line()+"\n"); err != nil {
			return err
		}
	} else {
		if err := os.MkdirAll(filepath.Join(j.dir, "results"), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(j.dir, path), []byte(j.value+"\n"), 0o644); err != nil {
			return err
		}
	}
	if _, err := r.output(j.dir, git, "add", "--", path); err != nil {
		return err
	}
	if _, err := r.output(j.dir, git, "commit", "--quiet", "--no-verify", "-m", j.name+": result"); err != nil {
		return err
	}
	if checkout == "sha" {
		oid, err := r.output(j.dir, git, "rev-parse", "--verify", "HEAD")
		if err != nil {
			return err
		}
		j.src, j.shellSrc, j.dst = strings.TrimSpace(oid), `"$(git rev-parse HEAD)"`, "refs/heads/main"
	}
	return nil
}

func appendFile(path, text string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	_, err = f.WriteString(text)
	return errors.Join(err, f.Close())
}

// makeSeed makes the seed repository of a mode under dir: branch main with
// one commit holding README.md, and for the shared modes results.csv with
// its header (and .gitattributes for union). Trials push it to their remote.
func makeSeed(r *runner, mode matrixMode, dir string) error {
	if _, err := r.output("", r.git, "init", "--quiet", "--initial-branch=main", dir); err != nil {
		return err
	}
	files := map[string]string{"README.md": "matrix benchmark results\n"}
	if mode.shared {
		files["results.csv"] = matrixHeader + "\n"
	}
	if mode.union {
		files[".gitattributes"] = "results.csv merge=union\n"
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			return err
		}
	}
	if _, err := r.output(dir, r.git, "add", "--all"); err != nil {
		return err
	}
	_, err := r.output(dir, r.git, "-c", "user.name=seed", "-c", "user.email=seed@example.com",
		"commit", "--quiet", "--no-verify", "-m", "seed")
	return err
}

// matrixHeader is the first line of results.csv.
const matrixHeader = "job,value"

// childrenCPU is the user+system time of every child this process has
// reaped so far, with their own reaped descendants.
func childrenCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// selfCPU is this process's own user+system time so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// loadAverage is the 1-minute load average, from /proc/loadavg.
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "n/a"
	}
	if f := strings.Fields(string(data)); len(f) > 0 {
		return f[0]
	}
	return "n/a"
}

// serverSettle is how long a trial waits after the last job's exit before it
// reads the server's CPU time, so that server processes still exiting after
// their answer was sent are counted. It is not part of the wall time.
const serverSettle = 100 * time.Millisecond

// matrixTrial runs n jobs of one method (and its land) against a fresh
// remote and checks the branch afterwards.
func matrixTrial(r *runner, cfg config, srv *matrixServer, tools matrixTools, mode matrixMode, m matrixMethod, n, trial int, work string) (res matrixResult, err error) {
	repoName := fmt.Sprintf("m-%s-%d-%d-%s", mode.name, n, trial, m.name)
	rem, err := srv.newRepo(repoName, filepath.Join(work, "seed-"+mode.name))
	if err != nil {
		return res, err
	}
	defer func() { err = errors.Join(err, rem.remove()) }()
	dir := filepath.Join(work, repoName)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return res, err
	}
	defer func() { err = errors.Join(err, os.RemoveAll(dir)) }()
	jobs, err := setupJobs(r, cfg, mode, rem.url, dir, n)
	if err != nil {
		return res, err
	}
	dirs, argvs := make([]string, n), make([][]string, n)
	for i, j := range jobs {
		dirs[i], argvs[i] = j.dir, m.argv(tools, j)
	}

	jr := *r.withEnv(m.env...)
	jr.timeout = cfg.matrix.jobTimeout
	jr.stdoutToo = true // git pull prints its conflicts there
	res.load = loadAverage()
	before := readCounters(srv)
	outcomes, wall, err := jr.concurrentIn(dirs, argvs)
	if err != nil {
		return res, err
	}
	var land *outcome
	if m.land != nil {
		if land, err = runLand(&jr, srv, jobs[0].dir, m.land(tools), &res); err != nil {
			return res, err
		}
	}
	time.Sleep(serverSettle)
	res.tallyProcesses(before, readCounters(srv), wall, outcomes, land)

	counts, extra, err := readResults(r, rem.gitDir, mode, m.ownBranch, jobs)
	if err != nil {
		return res, err
	}
	res.check = tally(counts, exitedZero(outcomes, land))
	res.check.extra = extra
	return res, nil
}

// trialCounters are what a trial reads of the server and of this process
// before and after its processes run.
type trialCounters struct {
	pushes, requests int
	children, self   time.Duration // childrenCPU, selfCPU
	server           time.Duration // matrixServer.cpu
	serverOK         bool
}

func readCounters(srv *matrixServer) trialCounters {
	c := trialCounters{pushes: srv.pushes(), requests: srv.requests(), children: childrenCPU(), self: selfCPU()}
	c.server, c.serverOK = srv.cpu()
	return c
}

// runLand runs a method's land in dir, alone at the gate, once every job has
// exited, and records its own wall time, pushes and requests in res.
func runLand(jr *runner, srv *matrixServer, dir string, argv []string, res *matrixResult) (*outcome, error) {
	pushes0, requests0 := srv.pushes(), srv.requests()
	outcomes, wall, err := jr.concurrentIn([]string{dir}, [][]string{argv})
	if err != nil {
		return nil, fmt.Errorf("land: %w", err)
	}
	res.hasLand, res.landWall = true, wall
	res.landPushes, res.landRequests = srv.pushes()-pushes0, srv.requests()-requests0
	return &outcomes[0], nil
}

// tallyProcesses fills in what the jobs and the land (nil without one) did,
// from their outcomes and the counters before and after them: the wall time
// (the jobs' and the land's: the bench's start of the land's process between
// them is left out), the jobs that exited 0, the failures, the pushes,
// requests and CPU times.
func (res *matrixResult) tallyProcesses(before, after trialCounters, wall time.Duration, outcomes []outcome, land *outcome) {
	res.wall, res.pushes, res.requests, res.benchCPU = wall+res.landWall, after.pushes-before.pushes, after.requests-before.requests, after.self-before.self
	var reaped time.Duration // with the gates: what RUSAGE_CHILDREN counted for them
	procs := slices.Clone(outcomes)
	if land != nil {
		procs = append(procs, *land)
	}
	for i, o := range procs {
		reaped += o.cpu
		res.clientCPU += o.targetCPU()
		if o.err == nil {
			continue
		}
		if strings.HasPrefix(o.err.Error(), "timed out") {
			res.timedOut++
		}
		if res.firstErr == "" {
			res.firstErr = decidingLine(o.stderr, o.stderrTail, o.err.Error())
			if i == len(outcomes) {
				res.firstErr = "the land: " + res.firstErr
			}
		}
	}
	for _, ok := range exitedZero(outcomes, land) {
		if ok {
			res.landed++
		}
	}
	// Every child reaped in the window was a job, the land or a server
	// process (git http-backend and what it ran); a Gitea's processes are
	// its own children and are counted through srv.cpu.
	res.serverCPU = max(0, after.children-before.children-reaped) + (after.server - before.server)
	res.serverOK = before.serverOK && after.serverOK
}

// exitedZero says for each job whether it counts as exited 0: it did, and so
// did the land, if there is one.
func exitedZero(outcomes []outcome, land *outcome) []bool {
	ok := make([]bool, len(outcomes))
	for i, o := range outcomes {
		ok[i] = o.err == nil && (land == nil || land.err == nil)
	}
	return ok
}

// decidingLine picks the line that says why a job failed from the head
// and the tail of its output: refretry's own last word, else the first
// conflict, rejected ref, fatal or error line, else the first line, else
// the exit status. Progress lines ending in a carriage return are lines.
func decidingLine(head, tail, status string) string {
	all := head
	if tail != "" && !strings.HasSuffix(head, tail) {
		all = head + "\n" + tail
	}
	lines := strings.FieldsFunc(all, func(c rune) bool { return c == '\n' || c == '\r' })
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); strings.HasPrefix(l, "refretry: ") && !strings.HasPrefix(l, "refretry: attempt ") {
			return l
		}
	}
	for _, prefix := range []string{"CONFLICT", "! [", "!\t", "fatal:", "error:"} {
		for _, l := range lines {
			if l = strings.TrimSpace(l); strings.HasPrefix(l, prefix) {
				return l
			}
		}
	}
	if l := firstLine(head); l != "" {
		return l
	}
	return status
}

// runMatrix is the matrix phase.
func runMatrix(r *runner, cfg config, root string) (string, error) {
	rep, err := matrixPhase(r, cfg, root)
	if rep == nil {
		return "", err
	}
	return rep.render(), err
}

// matrixPhase runs the matrix phase and returns its trials, also those
// made before a failure.
func matrixPhase(r *runner, cfg config, root string) (*matrixReport, error) {
	modes, methods := selectedMatrix(cfg)
	tools := matrixTools{git: cfg.git, refretry: cfg.refretry, pushTimeout: cfg.matrix.pushTimeout}
	skips := map[string]string{} // method name: why it cannot run
	var err error
	if tools.sh, err = resolveExe("sh"); err != nil {
		return nil, fmt.Errorf("sh: %w", err)
	}
	for _, m := range methods {
		if m.needs == "flock" && tools.flock == "" {
			if tools.flock, err = resolveExe("flock"); err != nil {
				skips[m.name] = "flock(1) not found: " + err.Error()
			}
		}
	}
	work := filepath.Join(root, "matrix")
	if err := os.MkdirAll(work, 0o755); err != nil {
		return nil, err
	}
	jobRunner := *r
	jobRunner.env = matrixEnv(r.env, cfg.git)
	mr := &jobRunner
	for _, mode := range modes {
		if err := makeSeed(mr, mode, filepath.Join(work, "seed-"+mode.name)); err != nil {
			return nil, fmt.Errorf("seed of %s: %w", mode.name, err)
		}
	}

	rep := newMatrixReport(cfg, modes, methods, skips)
	for _, kind := range cfg.matrix.servers {
		for _, rtt := range cfg.matrix.roundTrips() {
			name := matrixServerName(kind, rtt)
			srv, skip, err := startMatrixServer(mr, cfg, kind, rtt, filepath.Join(work, "served-"+name))
			if err != nil {
				return rep, fmt.Errorf("server %s: %w", name, err)
			}
			if skip != "" {
				progress("matrix: skipping server %s: %s", name, skip)
				rep.skipServer(name, skip)
				continue
			}
			rep.server(srv.name, srv.label)
			err = runMatrixServer(mr, cfg, srv, tools, modes, methods, skips, rep, work)
			srv.close()
			if err != nil {
				return rep, fmt.Errorf("server %s: %w", name, err)
			}
		}
	}
	return rep, nil
}

// runMatrixServer runs every N, trial, mode and method against one server.
func runMatrixServer(r *runner, cfg config, srv *matrixServer, tools matrixTools, modes []matrixMode, methods []matrixMethod,
	skips map[string]string, rep *matrixReport, work string) error {
	trials := cfg.trialsOfMatrix()
	for _, n := range cfg.matrix.jobs {
		for t := range trials {
			for mi, mode := range modes {
				for k := range methods {
					m := methods[(t+mi+k)%len(methods)]
					if skips[m.name] != "" {
						continue
					}
					res, err := matrixTrial(r, cfg, srv, tools, mode, m, n, t+1, work)
					if err != nil {
						return fmt.Errorf("%d jobs, %s, %s, trial %d: %w", n, mode.name, m.name, t+1, err)
					}
					progress("matrix %s %s n=%d trial %d/%d %s: %s s wall, %d/%d exited 0, %d once, %d lost, %d duplicated, %d pushes, %d requests, load %s",
						srv.name, mode.name, n, t+1, trials, m.name, seconds(res.wall), res.landed, n,
						res.check.once, res.check.lost, res.check.dup, res.pushes, res.requests, res.load)
					if res.hasLand {
						progress("matrix: %s's land: %s s wall, %d pushes, %d requests", m.name, seconds(res.landWall), res.landPushes, res.landRequests)
					}
					if res.check.okLost > 0 {
						progress("matrix: WARNING: %s: %d jobs exited 0 but their result is not on the branch", m.name, res.check.okLost)
					}
					rep.add(mode.name, m.name, n, t+1, res)
				}
			}
		}
	}
	return nil
}
