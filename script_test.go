package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/refretry/refretry/internal/harness/capture"
	"github.com/refretry/refretry/internal/harness/testutil"
	"github.com/refretry/refretry/internal/platform"
)

// TestScript runs the end-to-end scripts in testdata/script against real git: 2.55
// with each ref backend and the system git 2.39 with files. A fake git first on PATH
// (internal/harness/fakegit) replays failures captured from the same git version and backend
// (testdata/stderr) a chosen number of times before handing over to the real one.
//
// Commands the scripts have, besides testscript's own:
//
//	refretry ARGS...     run refretry (this binary as main) with the fake git on PATH
//	git ARGS...          run the real git directly, bypassing the fake
//	status N             the last refretry or git command exited N
//	any refretry|git ARGS...  run refretry or the real git, success or failure alike
//	statusvar NAME       $NAME becomes the last command's exit code (status $NAME)
//	repo                 make $WORK a repository as the fixtures' was made, cd there; sets
//	                     $A $B $C (commits A <- B <- C; main, x and y at A), $ZERO,
//	                     $REPO, $GITDIR
//	fake NAME N          the next N update-ref calls replay testdata/stderr/<git>-<backend>-NAME;
//	                     "fake off" replays none. Either restarts the count and the log.
//	attempts N           update-ref ran N times since the last fake (or the start)
//	gitcalls             stdout becomes the fake's log: each git invocation's subcommand
//	cmpfixture stdout|stderr  the last command's output is exactly the fixture's
//	                     (with the fake git's adaptation of the repository path)
//	untime               replaces the durations in refretry's own stderr lines with
//	                     DELAY, ELAPSED and AGE so that golden files never hold timings
//	age FILE DURATION    set FILE's modification time DURATION ago
//
// Conditions: [reftable], [files], [git2.39], [git2.55]. $PIDNS_NOTE is what refretry
// adds to a reason resting on an unseen holder pid when the tests run in a container.
func TestScript(t *testing.T) {
	t.Parallel()
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(bin, "git"), "./internal/harness/fakegit")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the fake git: %v\n%s", err, out)
	}
	fixtures, err := filepath.Abs(filepath.Join("testdata", "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	cur := testutil.NewGit(t)
	// Each git and each backend at the default size; git 2.55 on files too at the
	// stress size (testutil.Cells).
	for _, v := range testutil.Cells(t, []scriptVariant{
		{git: testutil.SystemGit(t), backend: "files"},
		{git: cur, backend: "files"},
		{git: cur, backend: "reftable"},
	}, 0, 2) {
		v.bin, v.refretry, v.fixtures = bin, binary, fixtures
		t.Run(v.name(), func(t *testing.T) {
			t.Parallel()
			testscript.Run(t, v.params())
		})
	}
}

// scriptVariant is one git version and ref backend the scripts run against.
type scriptVariant struct {
	git      testutil.Git
	backend  string
	bin      string // holds the fake git
	refretry string // this test binary as refretry (TestMain)
	fixtures string
}

// version is the git version as the fixture file names spell it ("2.55").
func (v scriptVariant) version() string {
	parts := strings.SplitN(v.git.Version, ".", 3)
	if len(parts) < 2 {
		return v.git.Version
	}
	return parts[0] + "." + parts[1]
}

func (v scriptVariant) name() string { return "git" + v.version() + "/" + v.backend }

// coverDir is where `go test -cover` collects coverage data ("" without -cover). A
// coverage-instrumented binary writes its counters there at exit when GOCOVERDIR
// names it: TestMain sets it for every refretry the tests start.
func coverDir() string {
	if f := flag.Lookup("test.gocoverdir"); f != nil {
		return f.Value.String()
	}
	return ""
}

// scriptState is what the commands of one script share.
type scriptState struct {
	status int // exit code of the last refretry or git command; -1 before any
}

type stateKey struct{}

func state(ts *testscript.TestScript) *scriptState {
	return ts.Value(stateKey{}).(*scriptState)
}

func (v scriptVariant) params() testscript.Params {
	return testscript.Params{
		Dir:                 filepath.Join("testdata", "script"),
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		Setup: func(e *testscript.Env) error {
			e.Values[stateKey{}] = &scriptState{status: -1}
			home := filepath.Join(e.WorkDir, ".home")
			if err := os.MkdirAll(home, 0o755); err != nil {
				return err
			}
			for _, kv := range [][2]string{
				{"PATH", v.bin + string(filepath.ListSeparator) + e.Getenv("PATH")},
				{"HOME", home},
				{"XDG_CONFIG_HOME", filepath.Join(home, ".config")},
				{"GIT_CONFIG_NOSYSTEM", "1"},
				{"LC_ALL", "C"},
				{"TZ", "UTC"},
				// The identity and dates scripts/capture-fixtures.sh uses: the scripts'
				// commits are the fixtures' commits, oid for oid.
				{"GIT_AUTHOR_NAME", "Fixture Author"},
				{"GIT_AUTHOR_EMAIL", "author@example.invalid"},
				{"GIT_COMMITTER_NAME", "Fixture Committer"},
				{"GIT_COMMITTER_EMAIL", "committer@example.invalid"},
				{"GIT_AUTHOR_DATE", "1700000000 +0000"},
				{"GIT_COMMITTER_DATE", "1700000000 +0000"},
				{"REFRETRY_FAKEGIT_REAL", v.git.Path},
				{"REFRETRY_FAKEGIT_STATE", filepath.Join(e.WorkDir, ".fakegit-count")},
				{"REFRETRY_FAKEGIT_LOG", filepath.Join(e.WorkDir, ".fakegit-log")},
				// Under -race, refretry (this binary) would otherwise wait a second at exit
				// for racing goroutines to report; a race is still reported and fails
				// the script's stderr comparison.
				{"GORACE", "atexit_sleep_ms=0"},
				// Under -cover, refretry's counters join the test's own.
				{"GOCOVERDIR", coverDir()},
				{"GITVERSION", v.version()},
				{"BACKEND", v.backend},
				{"PIDNS_NOTE", pidNamespaceNote()},
			} {
				e.Setenv(kv[0], kv[1])
			}
			return nil
		},
		Condition: func(cond string) (bool, error) {
			switch cond {
			case "reftable", "files":
				return cond == v.backend, nil
			case "git2.39", "git2.55":
				return cond == "git"+v.version(), nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"refretry": func(ts *testscript.TestScript, neg bool, args []string) {
				execRecord(ts, neg, v.refretry, args)
			},
			"git": func(ts *testscript.TestScript, neg bool, args []string) {
				execRecord(ts, neg, v.git.Path, args)
			},
			"any": func(ts *testscript.TestScript, neg bool, args []string) {
				if neg || len(args) == 0 || args[0] != "refretry" && args[0] != "git" {
					ts.Fatalf("usage: any refretry|git ARGS...")
				}
				path := v.refretry
				if args[0] == "git" {
					path = v.git.Path
				}
				record(ts, path, args[1:])
			},
			"status":     cmdStatus,
			"statusvar":  cmdStatusVar,
			"repo":       v.cmdRepo,
			"fake":       v.cmdFake,
			"attempts":   cmdAttempts,
			"gitcalls":   cmdGitCalls,
			"cmpfixture": cmdCmpFixture,
			"untime":     cmdUntime,
			"age":        cmdAge,
		},
	}
}

// pidNamespaceNote is what refretry adds to a reason that rests on a holder pid it
// cannot see, when it runs (as this test does) in a container's pid namespace.
func pidNamespaceNote() string {
	if !platform.OwnPIDNamespace() {
		return ""
	}
	return "; refretry runs in a container's pid namespace, where a holder in another container or on the host cannot be seen"
}

// execRecord runs a program with the script's environment, directory and stdin, and
// records its exit code for status.
func execRecord(ts *testscript.TestScript, neg bool, path string, args []string) {
	code := record(ts, path, args)
	if neg && code == 0 {
		ts.Fatalf("unexpected success")
	}
	if !neg && code != 0 {
		ts.Fatalf("exit status %d", code)
	}
}

// record runs a program as execRecord does, whatever its exit code, and returns it.
func record(ts *testscript.TestScript, path string, args []string) int {
	err := ts.Exec(path, args...)
	code := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		ts.Fatalf("%s: %v", path, err)
	}
	state(ts).status = code
	return code
}

// cmdStatusVar sets the variable NAME to the last command's exit code, for a later
// status $NAME: what one git does, which another git may do differently.
func cmdStatusVar(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: statusvar NAME")
	}
	ts.Setenv(args[0], strconv.Itoa(state(ts).status))
}

func cmdStatus(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: status N")
	}
	want, err := strconv.Atoi(args[0])
	ts.Check(err)
	if got := state(ts).status; got != want {
		ts.Fatalf("exit status %d, want %d", got, want)
	}
}

// The commits of scripts/capture-fixtures.sh's template repository, which the repo
// command recreates: scripts may write them literally where no variable is expanded
// (stdin files).
const (
	fixtureA = "aa25968fabe89b3c78e5972e671269fec76274f9"
	fixtureB = "05d111e482e6d0736ef43a955e349439447142f3"
	fixtureC = "832bf480eac78f1b8c06a603e60c1ea1efb7a422"
)

// cmdRepo makes the repository the fixtures were captured in (capture-fixtures.sh's
// template): commits A <- B <- C on the empty tree, main, x and y at A.
func (v scriptVariant) cmdRepo(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: repo")
	}
	dir := ts.Getenv("WORK")
	git := func(args ...string) string {
		if err := ts.Exec(v.git.Path, args...); err != nil {
			ts.Fatalf("git %s: %v", strings.Join(args, " "), err)
		}
		return strings.TrimSpace(ts.ReadFile("stdout"))
	}
	initArgs := []string{"init", "-q", "-b", "main"}
	if v.git.Reftable {
		initArgs = append(initArgs, "--ref-format="+v.backend)
	} else if v.backend != "files" {
		ts.Fatalf("git %s has no %s backend", v.git.Version, v.backend)
	}
	git(append(initArgs, dir)...)
	ts.Check(ts.Chdir(dir))
	tree := git("mktree")
	a := git("commit-tree", "-m", "A", tree)
	b := git("commit-tree", "-p", a, "-m", "B", tree)
	c := git("commit-tree", "-p", b, "-m", "C", tree)
	if a != fixtureA || b != fixtureB || c != fixtureC {
		ts.Fatalf("commits %s %s %s are not the fixtures' %s %s %s", a, b, c, fixtureA, fixtureB, fixtureC)
	}
	for _, ref := range []string{"refs/heads/main", "refs/heads/x", "refs/heads/y"} {
		git("update-ref", "-m", "setup", ref, a)
	}
	for k, val := range map[string]string{
		"A": a, "B": b, "C": c, "ZERO": strings.Repeat("0", len(a)),
		"REPO": dir, "GITDIR": filepath.Join(dir, ".git"), "REFRETRY_FAKEGIT_REPO": dir,
	} {
		ts.Setenv(k, val)
	}
}

// cmdFake chooses the capture the fake git replays, from this variant's git version
// and backend, and restarts its count and log. "fake off" replays nothing.
func (v scriptVariant) cmdFake(ts *testscript.TestScript, neg bool, args []string) {
	switch {
	case !neg && len(args) == 1 && args[0] == "off":
		ts.Setenv("REFRETRY_FAKEGIT_FIXTURE", "")
		ts.Setenv("REFRETRY_FAKEGIT_TIMES", "0")
	case !neg && len(args) == 2:
		if _, err := strconv.Atoi(args[1]); err != nil {
			ts.Fatalf("fake: N: %v", err)
		}
		path := filepath.Join(v.fixtures, v.version()+"-"+v.backend+"-"+args[0]+".txtar")
		if _, err := os.Stat(path); err != nil {
			ts.Fatalf("fake: no capture %s for git %s/%s: %v", args[0], v.version(), v.backend, err)
		}
		ts.Setenv("REFRETRY_FAKEGIT_FIXTURE", path)
		ts.Setenv("REFRETRY_FAKEGIT_TIMES", args[1])
	default:
		ts.Fatalf("usage: fake NAME N | fake off")
	}
	for _, key := range []string{"REFRETRY_FAKEGIT_STATE", "REFRETRY_FAKEGIT_LOG"} {
		if err := os.Remove(ts.Getenv(key)); err != nil && !os.IsNotExist(err) {
			ts.Fatalf("%v", err)
		}
	}
}

func cmdAttempts(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: attempts N")
	}
	want, err := strconv.Atoi(args[0])
	ts.Check(err)
	got := 0
	if fi, err := os.Stat(ts.Getenv("REFRETRY_FAKEGIT_STATE")); err == nil {
		got = int(fi.Size())
	} else if !os.IsNotExist(err) {
		ts.Fatalf("%v", err)
	}
	if got != want {
		ts.Fatalf("git update-ref ran %d times, want %d", got, want)
	}
}

func cmdGitCalls(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: gitcalls")
	}
	b, err := os.ReadFile(ts.Getenv("REFRETRY_FAKEGIT_LOG"))
	if err != nil && !os.IsNotExist(err) {
		ts.Fatalf("%v", err)
	}
	fmt.Fprint(ts.Stdout(), string(b))
}

// cmdCmpFixture compares stdout or stderr with the replayed capture's, byte for byte,
// after the same path adaptation the fake git makes.
func cmdCmpFixture(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 || (args[0] != "stdout" && args[0] != "stderr") {
		ts.Fatalf("usage: cmpfixture stdout|stderr")
	}
	c, err := capture.Read(ts.Getenv("REFRETRY_FAKEGIT_FIXTURE"))
	ts.Check(err)
	want := string(c.Stdout)
	if args[0] == "stderr" {
		want = string(c.Stderr)
	}
	if repo := ts.Getenv("REFRETRY_FAKEGIT_REPO"); repo != "" {
		want = strings.ReplaceAll(want, "/tmp/refretry-fixtures/r/", repo+"/")
	}
	if got := ts.ReadFile(args[0]); got != want {
		ts.Fatalf("%s differs from the capture's\n got: %q\nwant: %q", args[0], got, want)
	}
}

var (
	goDuration = `(?:[0-9.]+(?:ns|µs|us|ms|s|m|h))+`
	timings    = []struct {
		re   *regexp.Regexp
		repl string
	}{
		{regexp.MustCompile(`(; retrying in )` + goDuration + `$`), "${1}DELAY"},
		{regexp.MustCompile(`^(refretry: gave up after \d+ attempts? in )` + goDuration), "${1}ELAPSED"},
		{regexp.MustCompile(`(\(age )` + goDuration), "${1}AGE"},
	}
)

// cmdUntime replaces the durations in refretry's own lines of the last stderr, which
// depend on the clock, with fixed words. Everything else is left byte for byte.
func cmdUntime(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: untime")
	}
	stdout, stderr := ts.ReadFile("stdout"), ts.ReadFile("stderr")
	lines := strings.SplitAfter(stderr, "\n")
	for i, line := range lines {
		if !strings.HasPrefix(line, "refretry: ") {
			continue
		}
		body, nl := strings.CutSuffix(line, "\n")
		for _, t := range timings {
			body = t.re.ReplaceAllString(body, t.repl)
		}
		if nl {
			body += "\n"
		}
		lines[i] = body
	}
	fmt.Fprint(ts.Stdout(), stdout)
	fmt.Fprint(ts.Stderr(), strings.Join(lines, ""))
}

func cmdAge(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: age FILE DURATION")
	}
	d, err := time.ParseDuration(args[1])
	ts.Check(err)
	then := time.Now().Add(-d)
	ts.Check(os.Chtimes(ts.MkAbs(args[0]), then, then))
}
