package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/refretry/refretry/internal/harness/testutil"
)

// TestMain lets this test binary act as the start gate, as the bench
// binary does: gated children are a re-exec of it.
func TestMain(m *testing.M) {
	if os.Getenv(gateEnv) == "1" {
		os.Exit(gateMain(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// TestMatrixSmoke runs the matrix phase with 2 jobs (3 at the stress size)
// against the HTTP server, with plain git and refretry push --rebase, in every
// mode, and checks what landed. It asserts outcomes, never times.
func TestMatrixSmoke(t *testing.T) {
	git := smokeGit(t)
	jobs := testutil.Scale(t, 2, 3)
	cfg := config{git: git, refretry: smokeRefretry(t), trials: 1, timeout: 2 * time.Minute, charts: t.TempDir()}
	cfg.matrix = matrixConfig{
		jobs: intList{jobs}, modes: matrixModeNames(), methods: nameList{"git", "rebase"}, servers: nameList{"http"},
		checkout: "detached", pushTimeout: time.Minute, jobTimeout: 2 * time.Minute,
	}
	rep := smokePhase(t, cfg)
	if len(rep.servers) != 1 || rep.servers[0].name != "http" {
		t.Fatalf("servers %+v", rep.servers)
	}
	trials := rep.servers[0].trials
	for _, mode := range matrixModes {
		plain := trials[matrixKey{mode.name, "git", jobs}]
		rebase := trials[matrixKey{mode.name, "rebase", jobs}]
		if len(plain) != 1 || len(rebase) != 1 {
			t.Fatalf("%s: %d git and %d rebase trials, want 1 each", mode.name, len(plain), len(rebase))
		}
		for name, res := range map[string]matrixResult{"git": plain[0], "rebase": rebase[0]} {
			c := res.check
			if c.okLost != 0 || c.dup != 0 || c.once+c.lost != jobs || c.once != res.landed {
				t.Errorf("%s, %s: %d exited 0, results %+v", mode.name, name, res.landed, c)
			}
			if res.pushes < res.landed || res.wall <= 0 || res.clientCPU <= 0 {
				t.Errorf("%s, %s: %d pushes for %d landed, wall %v, client CPU %v", mode.name, name, res.pushes, res.landed, res.wall, res.clientCPU)
			}
		}
		// Every plain push but the first is refused; the union of results.csv
		// and separate files rebase cleanly, so every refretry job lands.
		if plain[0].landed != 1 {
			t.Errorf("%s: %d plain pushes landed, want 1", mode.name, plain[0].landed)
		}
		if !mode.shared || mode.union {
			if rebase[0].landed != jobs {
				t.Errorf("%s: %d of %d refretry --rebase jobs landed: %s", mode.name, rebase[0].landed, jobs, rebase[0].firstErr)
			}
		}
	}
	out := rep.render()
	for _, want := range []string{"### http, union", fmt.Sprintf("| %d | rebase |", jobs), "matrix-http-union-pushes.svg"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}

// TestMatrixLatencySmoke runs the matrix phase under the forge latency model
// with 2 jobs (3 at the stress size) of plain git and the floor: the server is the delayed one, each
// job's push makes its info/refs request besides any POST, what lands is what
// lands without the delay, and the report names the round trip. It asserts
// counts, never times.
func TestMatrixLatencySmoke(t *testing.T) {
	jobs := testutil.Scale(t, 2, 3)
	cfg := config{git: smokeGit(t), trials: 1, timeout: 2 * time.Minute}
	cfg.matrix = matrixConfig{
		jobs: intList{jobs}, modes: nameList{"files"}, methods: nameList{"git", "floor"}, servers: nameList{"http"},
		checkout: "branch", pushTimeout: time.Minute, jobTimeout: 2 * time.Minute, rtt: durationList{20 * time.Millisecond},
	}
	rep := smokePhase(t, cfg)
	if len(rep.servers) != 1 || rep.servers[0].name != "http-rtt20ms" {
		t.Fatalf("servers %+v", rep.servers)
	}
	for _, name := range []string{"git", "floor"} {
		trials := rep.servers[0].trials[matrixKey{"files", name, jobs}]
		if len(trials) != 1 {
			t.Fatalf("%s: %d trials, want 1", name, len(trials))
		}
		res := trials[0]
		// A plain push that sees the others' commit in its advertisement is refused
		// before it POSTs; every job makes its info/refs GET.
		if res.pushes < 1 || res.pushes > jobs || (name == "floor" && res.pushes != jobs) || res.requests < jobs+res.pushes {
			t.Errorf("%s: %d pushes, %d requests; want a GET for each job besides the POSTs", name, res.pushes, res.requests)
		}
		if want := map[string]int{"git": 1, "floor": jobs}[name]; res.landed != want || res.check.once != want {
			t.Errorf("%s: %d exited 0, %d results once; want %d", name, res.landed, res.check.once, want)
		}
	}
	out := rep.render()
	for _, want := range []string{"### http-rtt20ms, files", "every HTTP request to it delayed by a 20ms round trip", fmt.Sprintf("| %d | floor |", jobs)} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}

// TestMatrixFanInSmoke runs the fan-in with 2 jobs (3 at the stress size)
// beside gather and the floor, from clones on branch main (the land runs in
// job-000's, whose checked-out branch is the one it lands on): every job
// stages, the land lands every result once and its pushes are counted with
// the trial's, and the report compares it with the floor plus its land. It
// asserts outcomes and counts, never times.
func TestMatrixFanInSmoke(t *testing.T) {
	jobs := testutil.Scale(t, 2, 3)
	cfg := config{git: smokeGit(t), refretry: smokeRefretry(t), trials: 1, timeout: 2 * time.Minute}
	cfg.matrix = matrixConfig{
		jobs: intList{jobs}, modes: nameList{"files"}, methods: nameList{"fanin", "gather", "floor"}, servers: nameList{"http"},
		checkout: "branch", pushTimeout: time.Minute, jobTimeout: 2 * time.Minute,
	}
	rep := smokePhase(t, cfg)
	trials := rep.servers[0].trials
	for _, name := range []string{"fanin", "gather", "floor"} {
		got := trials[matrixKey{"files", name, jobs}]
		if len(got) != 1 {
			t.Fatalf("%s: %d trials, want 1", name, len(got))
		}
		res := got[0]
		if c := res.check; res.landed != jobs || c.once != jobs || c.dup != 0 || c.okLost != 0 {
			t.Errorf("%s: %d exited 0, results %+v: %s", name, res.landed, c, res.firstErr)
		}
		if res.hasLand != (name == "fanin") {
			t.Errorf("%s: has a land: %v", name, res.hasLand)
		}
	}
	fanin := trials[matrixKey{"files", "fanin", jobs}][0]
	// Each job's staging push, then the land's own: at least its wave.
	if fanin.landPushes < 1 || fanin.pushes < jobs+fanin.landPushes || fanin.landRequests <= fanin.landPushes ||
		fanin.requests < fanin.landRequests+2*jobs || fanin.landWall <= 0 || fanin.wall <= fanin.landWall {
		t.Errorf("fanin: %d pushes, %d requests, wall %v; the land's: %d pushes, %d requests, wall %v",
			fanin.pushes, fanin.requests, fanin.wall, fanin.landPushes, fanin.landRequests, fanin.landWall)
	}
	out := rep.render()
	for _, want := range []string{fmt.Sprintf("| %d | fanin ÷ (floor + its land) |", jobs), fmt.Sprintf("| %d | fanin ÷ gather |", jobs)} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}

// smokeRefretry builds refretry for a smoke test.
func smokeRefretry(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "refretry")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = ".."
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building refretry: %v\n%s", err, out)
	}
	return bin
}

// smokeGit is the git under test, REFRETRY_TEST_GIT, or skips the test.
func smokeGit(t *testing.T) string {
	t.Helper()
	git := os.Getenv("REFRETRY_TEST_GIT")
	if git == "" {
		t.Skip("REFRETRY_TEST_GIT is not set")
	}
	git, err := resolveExe(git)
	if err != nil {
		t.Fatal(err)
	}
	return git
}

// smokePhase runs the matrix phase of cfg in a temporary directory.
func smokePhase(t *testing.T, cfg config) *matrixReport {
	t.Helper()
	if err := cfg.validateMatrix(); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	r, err := newRunner(context.Background(), cfg, root)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := matrixPhase(r, cfg, root)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}
