package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestTally(t *testing.T) {
	t.Parallel()
	counts := []int{1, 0, 2, 0, 1, 3}
	exited0 := []bool{true, true, true, false, false, true}
	got := tally(counts, exited0)
	want := resultCheck{once: 2, lost: 2, dup: 2, okLost: 1}
	if got != want {
		t.Errorf("tally = %+v, want %+v", got, want)
	}
}

func TestLineCounts(t *testing.T) {
	t.Parallel()
	csv := matrixHeader + "\njob-000,1\njob-002,3\njob-000,1\n<<<<<<< HEAD\njob-002,3x\n"
	counts, extra := lineCounts(csv, []string{"job-000,1", "job-001,2", "job-002,3"})
	if !slices.Equal(counts, []int{2, 0, 1}) || extra != 2 {
		t.Errorf("counts %v, extra %d; want [2 0 1], 2", counts, extra)
	}
	// A last line without its newline still counts.
	if counts, extra := lineCounts("job-000,1", []string{"job-000,1"}); counts[0] != 1 || extra != 0 {
		t.Errorf("unterminated line: %v, %d", counts, extra)
	}
}

func TestParseCatFileBatch(t *testing.T) {
	t.Parallel()
	oid := strings.Repeat("a", 40)
	out := oid + " blob 4\n1.5\n\n" + "refs/heads/main:results/job-001.txt missing\n" + oid + " blob 0\n\n"
	entries, err := parseCatFileBatch(out, 3)
	if err != nil {
		t.Fatal(err)
	}
	want := []catEntry{{true, "1.5\n"}, {}, {true, ""}}
	if !slices.Equal(entries, want) {
		t.Errorf("entries %+v, want %+v", entries, want)
	}
	for name, bad := range map[string]string{
		"short":      oid + " blob 10\nabc\n",
		"too few":    oid + " blob 1\nx\n",
		"trailing":   oid + " blob 1\nx\nmore",
		"bad header": "what\n",
	} {
		n := 1
		if name == "too few" {
			n = 2
		}
		if _, err := parseCatFileBatch(bad, n); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// testJobs are n jobs as setupJobs names them.
func testJobs(mode matrixMode, n int) []matrixJob {
	jobs := make([]matrixJob, n)
	for i := range jobs {
		name, value := matrixJobName(i), matrixValue(i)
		jobs[i] = matrixJob{index: i, name: name, value: value, regen: regenCommand(mode, name, value)}
	}
	return jobs
}

func TestResultNamesAndCounts(t *testing.T) {
	t.Parallel()
	files, shared := matrixModes[0], matrixModes[1]
	jobs := testJobs(files, 3)

	names := resultNames(files, false, jobs)
	if names[1] != "refs/heads/main:results/job-001.txt" || len(names) != 3 {
		t.Errorf("files on main: %q", names)
	}
	entries := []catEntry{{true, jobs[0].value + "\n"}, {}, {true, "other\n"}}
	if counts, extra := resultCounts(files, false, jobs, entries); !slices.Equal(counts, []int{1, 0, 0}) || extra != 0 {
		t.Errorf("files counts %v, extra %d", counts, extra)
	}

	if names := resultNames(shared, false, jobs); !slices.Equal(names, []string{"refs/heads/main:results.csv"}) {
		t.Errorf("shared on main: %q", names)
	}
	csv := matrixHeader + "\n" + jobs[2].line() + "\n" + jobs[0].line() + "\n" + jobs[2].line() + "\n"
	if counts, extra := resultCounts(shared, false, jobs, []catEntry{{true, csv}}); !slices.Equal(counts, []int{1, 0, 2}) || extra != 0 {
		t.Errorf("shared counts %v, extra %d", counts, extra)
	}

	if names := resultNames(shared, true, jobs); names[2] != "refs/heads/job-002:results.csv" {
		t.Errorf("shared on own branches: %q", names)
	}
	own := []catEntry{
		{true, matrixHeader + "\n" + jobs[0].line() + "\n"},
		{true, matrixHeader + "\n"},
		{true, matrixHeader + "\n" + jobs[2].line() + "\nstray\n"},
	}
	if counts, extra := resultCounts(shared, true, jobs, own); !slices.Equal(counts, []int{1, 0, 1}) || extra != 1 {
		t.Errorf("own-branch counts %v, extra %d", counts, extra)
	}
	if names := resultNames(files, true, jobs); names[0] != "refs/heads/job-000:results/job-000.txt" {
		t.Errorf("files on own branches: %q", names)
	}
}

// TestRegenCommand runs each mode's --regenerate command twice with sh: the
// result is there once, whatever was there before.
func TestRegenCommand(t *testing.T) {
	t.Parallel()
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	for _, mode := range matrixModes {
		dir := t.TempDir()
		if mode.shared {
			if err := os.WriteFile(filepath.Join(dir, "results.csv"), []byte(matrixHeader+"\njob-009,x\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		j := testJobs(mode, 4)[3]
		for range 2 {
			cmd := exec.Command(sh, "-c", j.regen)
			cmd.Dir = dir
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%s: %s: %v\n%s", mode.name, j.regen, err, out)
			}
		}
		if mode.shared {
			data, _ := os.ReadFile(filepath.Join(dir, "results.csv"))
			if counts, extra := lineCounts(string(data), []string{j.line(), "job-009,x"}); !slices.Equal(counts, []int{1, 1}) || extra != 0 {
				t.Errorf("%s: results.csv %q", mode.name, data)
			}
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, j.file()))
		if err != nil || string(data) != j.value+"\n" {
			t.Errorf("%s: %s holds %q (%v)", mode.name, j.file(), data, err)
		}
	}
}

func TestMatrixMethods(t *testing.T) {
	t.Parallel()
	names := matrixMethodNames()
	if len(slices.Compact(slices.Sorted(slices.Values(names)))) != len(names) {
		t.Errorf("method names repeat: %v", names)
	}
	tools := matrixTools{git: "/g/git", refretry: "/r/refretry", sh: "/bin/sh", flock: "/bin/flock", pushTimeout: 90 * time.Second}
	j := testJobs(matrixModes[1], 1)[0]
	j.src, j.shellSrc, j.dst, j.lock = "0123abc", `"$(git rev-parse HEAD)"`, "refs/heads/main", "/t/queue.lock"
	argv := map[string][]string{}
	for _, m := range matrixMethods {
		argv[m.name] = m.argv(tools, j)
	}
	if got := argv["git"]; !slices.Equal(got, []string{"/g/git", "push", "origin", "0123abc:refs/heads/main"}) {
		t.Errorf("git: %q", got)
	}
	if got := argv["rebase"]; !slices.Equal(got, []string{"/r/refretry", "--timeout", "1m30s", "push", "--rebase", "origin", "0123abc:refs/heads/main"}) {
		t.Errorf("rebase: %q", got)
	}
	if got := argv["regenerate"]; len(got) != 8 || got[5] != j.regen {
		t.Errorf("regenerate: %q", got)
	}
	if got := argv["floor"]; got[len(got)-1] != "0123abc:refs/heads/job-000" {
		t.Errorf("floor: %q", got)
	}
	// The shell methods name the commit they have after a rebase.
	for _, name := range []string{"loop", "queue"} {
		script := argv[name][len(argv[name])-1]
		if !strings.Contains(script, `"$(git rev-parse HEAD)":refs/heads/main`) || !strings.Contains(script, "git pull --rebase origin main") {
			t.Errorf("%s: %q", name, script)
		}
	}
	if got := argv["queue"]; got[0] != "/bin/flock" || got[1] != "/t/queue.lock" {
		t.Errorf("queue: %q", got)
	}
	// The fan-in: the jobs stage only, and the land, with the same key, lands.
	if got := argv["fanin"]; !slices.Equal(got, []string{"/r/refretry", "--timeout", "1m30s", "push", "--gather", "--no-wait", "origin", "0123abc:refs/heads/main"}) {
		t.Errorf("fanin: %q", got)
	}
	for _, m := range matrixMethods {
		if m.name != "fanin" && m.land != nil {
			t.Errorf("%s has a land", m.name)
		}
		if m.name == "fanin" && (m.land == nil || !slices.Equal(m.land(tools), []string{"/r/refretry", "--timeout", "1m30s", "gather", "land", "origin", "main"}) ||
			!slices.Equal(m.env, gatherEnv) || !m.compare) {
			t.Errorf("fanin: land, env %q, compare %v", m.env, m.compare)
		}
	}
}

// TestTallyLand checks how a land's outcome decides the jobs': a job counts as
// exited 0 only when the land did too, the land's failure is said when no job
// failed, and its CPU, timeout and wall time are the trial's.
func TestTallyLand(t *testing.T) {
	t.Parallel()
	jobs := []outcome{{cpu: 3 * time.Second, gateCPU: time.Second}, {cpu: 2 * time.Second, gateCPU: time.Second}}
	before := trialCounters{pushes: 1, requests: 2, children: time.Second, serverOK: true}
	after := trialCounters{pushes: 6, requests: 20, children: 10 * time.Second, serverOK: true}
	for _, tc := range []struct {
		name     string
		land     *outcome
		landed   int
		timedOut int
		firstErr string
	}{
		{"no land", nil, 2, 0, ""},
		{"the land exited 0", &outcome{cpu: 2 * time.Second, gateCPU: time.Second}, 2, 0, ""},
		{"the land failed", &outcome{cpu: 2 * time.Second, gateCPU: time.Second, err: fmt.Errorf("exit status 128"),
			stderr: "refretry: landed 0 staged commits in 0 gathers\nfatal: unable to access 'x'\n"}, 0, 0, "the land: refretry: landed 0 staged commits in 0 gathers"},
		{"the land timed out", &outcome{err: fmt.Errorf("timed out after 5m0s: signal: killed")}, 0, 1, "the land: timed out after 5m0s: signal: killed"},
	} {
		res := matrixResult{}
		if tc.land != nil {
			res.hasLand, res.landWall = true, 2*time.Second
		}
		res.tallyProcesses(before, after, 3*time.Second, jobs, tc.land)
		wantWall, wantClient, reaped := 3*time.Second, 3*time.Second, 5*time.Second
		if tc.land != nil {
			wantWall, wantClient, reaped = 5*time.Second, wantClient+tc.land.targetCPU(), reaped+tc.land.cpu
		}
		switch {
		case res.landed != tc.landed || res.timedOut != tc.timedOut || res.firstErr != tc.firstErr:
			t.Errorf("%s: %d exited 0, %d timed out, first error %q; want %d, %d, %q", tc.name, res.landed, res.timedOut, res.firstErr, tc.landed, tc.timedOut, tc.firstErr)
		case res.wall != wantWall || res.clientCPU != wantClient || res.serverCPU != 9*time.Second-reaped || res.pushes != 5 || res.requests != 18:
			t.Errorf("%s: wall %v, client CPU %v, server CPU %v, %d pushes, %d requests", tc.name, res.wall, res.clientCPU, res.serverCPU, res.pushes, res.requests)
		}
	}
	// A failed job is named before the land.
	failed := []outcome{{}, {err: fmt.Errorf("exit status 1"), stderr: "refretry: cannot stage\n"}}
	res := matrixResult{}
	res.tallyProcesses(before, after, time.Second, failed, &outcome{err: fmt.Errorf("exit status 1")})
	if res.firstErr != "refretry: cannot stage" || res.landed != 0 {
		t.Errorf("a failed job and a failed land: first error %q, %d exited 0", res.firstErr, res.landed)
	}
}

func TestMatrixEnv(t *testing.T) {
	t.Parallel()
	env := matrixEnv([]string{"PATH=/usr/bin", "GIT_AUTHOR_NAME=A", "GIT_COMMITTER_EMAIL=c@x", "GIT_AUTHOR_DATE=1 +0000", "HOME=/h"}, "/opt/git/bin/git")
	want := []string{"PATH=/opt/git/bin:/usr/bin", "GIT_AUTHOR_DATE=1 +0000", "HOME=/h"}
	if !slices.Equal(env, want) {
		t.Errorf("matrixEnv = %q, want %q", env, want)
	}
	if env := matrixEnv(nil, "/g/git"); !slices.Equal(env, []string{"PATH=/g"}) {
		t.Errorf("without PATH: %q", env)
	}
}

func TestDecidingLine(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, head, tail, want string }{
		{"refretry's last word", "To http://x\n ! [rejected] HEAD -> main (fetch first)\nrefretry: attempt 1 failed (behind); retrying in 10ms\n",
			"refretry: gave up after 50 attempts in 3s (max-attempts); last failure: behind\n",
			"refretry: gave up after 50 attempts in 3s (max-attempts); last failure: behind"},
		{"conflict before error", "From x\nRebasing (1/1)\rerror: could not apply 1234... job\nCONFLICT (content): Merge conflict in results.csv\n", "",
			"CONFLICT (content): Merge conflict in results.csv"},
		{"rejected ref", "To http://x\n ! [remote rejected] HEAD -> main (incorrect old value provided)\nerror: failed to push some refs\n", "",
			"! [remote rejected] HEAD -> main (incorrect old value provided)"},
		{"progress line", "Rebasing (1/1)\rerror: could not apply 1234... job\n", "", "error: could not apply 1234... job"},
		{"first line", "something odd\n", "", "something odd"},
		{"nothing", "", "", "exit status 1"},
	}
	for _, c := range cases {
		if got := decidingLine(c.head, c.tail, "exit status 1"); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

func TestParseProcStat(t *testing.T) {
	t.Parallel()
	line := "4242 (gitea (web) x) S 17 4242 4242 0 -1 4194560 100 200 0 0 150 30 70 9 20 0 12 0 500 1000 300 18446744073709551615\n"
	st, err := parseProcStat(line)
	if err != nil {
		t.Fatal(err)
	}
	if st.comm != "gitea (web) x" || st.ppid != 17 || st.utime != 150 || st.stime != 30 || st.cutime != 70 || st.cstime != 9 {
		t.Errorf("parsed %+v", st)
	}
	for _, bad := range []string{"", "1 (x) S 1 2 3", "1 x) S"} {
		if _, err := parseProcStat(bad); err == nil {
			t.Errorf("parseProcStat(%q) accepted", bad)
		}
	}
	// This process's own line parses, with its parent.
	data, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		t.Skip("no /proc")
	}
	if st, err := parseProcStat(string(data)); err != nil || st.ppid != os.Getppid() {
		t.Errorf("own stat: %+v, %v", st, err)
	}
}

func TestHeadBufferTail(t *testing.T) {
	t.Parallel()
	b := &headBuffer{max: 4}
	for _, s := range []string{"ab", "cdef", "g", "hijklmno"} {
		b.Write([]byte(s))
	}
	if b.String() != "abcd" || b.Tail() != "lmno" {
		t.Errorf("head %q, tail %q", b.String(), b.Tail())
	}
}

func TestSummarizeMatrix(t *testing.T) {
	t.Parallel()
	trials := []matrixResult{
		{wall: 3 * time.Second, landed: 4, pushes: 10, requests: 30, check: resultCheck{once: 4}, clientCPU: time.Second, serverOK: true},
		{wall: time.Second, landed: 2, pushes: 8, requests: 20, check: resultCheck{once: 2, lost: 2, okLost: 1}, timedOut: 1, firstErr: "boom", serverOK: true},
		{wall: 2 * time.Second, landed: 0, pushes: 4, requests: 9, check: resultCheck{lost: 4, extra: 3}, serverOK: false},
	}
	s := summarizeMatrix(trials, 4)
	switch {
	case s.medianWall != 2*time.Second || !slices.Equal(s.walls, []time.Duration{3 * time.Second, time.Second, 2 * time.Second}):
		t.Errorf("walls: median %v, %v", s.medianWall, s.walls)
	case s.landedMedian != "2" || s.landedMin != 0 || s.onceMedian != "2" || s.onceMin != 0:
		t.Errorf("landed %s (%d), once %s (%d)", s.landedMedian, s.landedMin, s.onceMedian, s.onceMin)
	case s.complete != 1 || s.lost != 6 || s.okLost != 1 || s.extra != 3 || s.timedOut != 1:
		t.Errorf("totals %+v", s)
	case s.medianPushes != 8 || !s.perLandedOK || s.perLanded != 3.25: // median of 2.5 and 4: the trial with none exited 0 is left out
		t.Errorf("pushes %v, per job that exited 0 %v", s.medianPushes, s.perLanded)
	case s.medianRequests != 20 || s.requestsLanded != 8.75: // median of 7.5 and 10, as the pushes'
		t.Errorf("requests %v, per job that exited 0 %v", s.medianRequests, s.requestsLanded)
	case s.serverOK || s.firstErr != "boom":
		t.Errorf("serverOK %v, firstErr %q", s.serverOK, s.firstErr)
	}
	if none := summarizeMatrix(nil, 4); none.perLandedOK || none.trials != 0 {
		t.Errorf("no trials: %+v", none)
	}
}

// TestRenderMatrix checks that every row of the matrix tables has as many
// cells as its header, that a result lost by a job that exited 0 is flagged,
// and that the ratios and failures are written.
func TestRenderMatrix(t *testing.T) {
	t.Parallel()
	cfg := config{trials: 2}
	cfg.matrix = matrixConfig{jobs: intList{4, 8}, checkout: "detached", pushTimeout: time.Minute, jobTimeout: time.Minute}
	modes := matrixModes[:2]
	skips := map[string]string{"queue": "flock(1) not found | gone"}
	rep := newMatrixReport(cfg, modes, matrixMethods, skips)
	rep.server("http", "smart HTTP")
	for _, mode := range modes {
		for _, n := range cfg.matrix.jobs {
			for _, m := range matrixMethods {
				if skips[m.name] != "" {
					continue
				}
				for trial := 1; trial <= 2; trial++ {
					res := matrixResult{wall: time.Duration(n) * time.Second, landed: n, pushes: 2 * n, requests: 5 * n, check: resultCheck{once: n},
						clientCPU: time.Second, serverCPU: time.Second, serverOK: true, load: "1.00"}
					if m.name == "rebase" && mode.name == "shared" && n == 8 {
						res.check = resultCheck{once: 7, lost: 1, okLost: 1}
					}
					if m.name == "git" {
						res.landed, res.check, res.firstErr = 1, resultCheck{once: 1, lost: n - 1}, "! [rejected] HEAD -> main (fetch first)"
					}
					rep.add(mode.name, m.name, n, trial, res)
				}
			}
		}
	}
	rep.skipServer("gitea", "no Gitea binary")
	out := rep.render()

	width, rows := -1, 0
	for line := range strings.Lines(out) {
		if !strings.HasPrefix(line, "|") {
			width = -1
			continue
		}
		cells := strings.Count(strings.ReplaceAll(line, `\|`, ""), "|")
		if width < 0 {
			width = cells
			continue
		}
		rows++
		if cells != width {
			t.Errorf("row has %d separators, header %d: %s", cells, width, line)
		}
	}
	if rows == 0 {
		t.Fatal("no table rows")
	}
	for _, want := range []string{
		"### http, files", "### http, shared", "### Server gitea: skipped\n\nno Gitea binary",
		"| 8 | rebase | 8 (8) | 7 (7) | 0 of 2 | 2 | 0 | **2** |",
		"WARNING (refretry): rebase, 8 jobs: 2 jobs exited 0 but their result is not on the branch",
		"| 4 | rebase ÷ loop | **1.00×** | 1.00× | 1.00× | 1.00× | 1.00× |  |",
		"| 16 | 2.00 | 40 | 5.00 | 1.000 | 1.000 |",
		"| forge round trip (`-matrix-latency`, `-matrix-rtt`) | none (CPU-bound",
		"| 8 | rebase ÷ floor |", "| 8 | regenerate ÷ loop |",
		"| 4 | queue | skipped: flock(1) not found \\| gone |",
		"- git, 4 jobs: `! [rejected] HEAD -> main (fetch first)`",
		"`--timeout 1m0s` on every refretry push",
		"| http | shared | 8 | 2 | rebase | 1.00 | 8.000 | 8 | 0 | 7 | 1 | 0 | 1 | 0 | 16 | 40 |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if strings.Contains(out, "rebase ÷ queue") {
		t.Errorf("a ratio against the skipped queue was written:\n%s", out)
	}
}

// TestRenderFanIn checks the fan-in's place in the report: the land in the
// raw trials, its ratios against gather and the floor, and against the floor
// plus its own land.
func TestRenderFanIn(t *testing.T) {
	t.Parallel()
	cfg := config{trials: 1}
	cfg.matrix = matrixConfig{jobs: intList{8}, checkout: "detached", pushTimeout: time.Minute, jobTimeout: time.Minute}
	_, methods := selectedMatrix(config{matrix: matrixConfig{methods: nameList{"floor", "fanin", "gather"}}})
	rep := newMatrixReport(cfg, matrixModes[:1], methods, nil)
	rep.server("http", "smart HTTP")
	for _, m := range methods {
		res := matrixResult{wall: 4 * time.Second, landed: 8, pushes: 8, requests: 16, check: resultCheck{once: 8}, serverOK: true, load: "1.00"}
		if m.name == "fanin" {
			res.wall, res.pushes, res.requests = 6*time.Second, 11, 31
			res.hasLand, res.landWall, res.landPushes, res.landRequests = true, time.Second, 3, 15
		}
		rep.add("files", m.name, 8, 1, res)
	}
	out := rep.render()
	for _, want := range []string{
		"| 8 | fanin ÷ gather | **1.50×** |",
		"| 8 | fanin ÷ floor | **1.50×** | 1.38× | 1.94× |",
		"| 8 | fanin ÷ (floor + its land) | **1.20×** | 1.00× | 1.00× | n/a | n/a | the land (waves of up to 64 staged commits): median 1.000 s, 3 pushes, 15 requests |",
		"| http | files | 8 | 1 | fanin | 1.00 | 6.000 | 8 | 0 | 8 | 0 | 0 | 0 | 0 | 11 | 31 | 0.000 | 0.000 | 0.000 | 1.000, 3, 15 |\n",
		// Without a land, its cell is empty.
		"| http | files | 8 | 1 | gather | 1.00 | 4.000 | 8 | 0 | 8 | 0 | 0 | 0 | 0 | 8 | 16 | 0.000 | 0.000 | 0.000 |  |\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "gather ÷ (floor") {
		t.Errorf("a method without a land is compared with the floor plus a land:\n%s", out)
	}
}

func TestMatrixCharts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := config{trials: 1, charts: dir, out: filepath.Join(dir, "r.md")}
	cfg.matrix = matrixConfig{jobs: intList{4, 8}, checkout: "detached", pushTimeout: time.Minute, jobTimeout: time.Minute}
	rep := newMatrixReport(cfg, matrixModes[:1], matrixMethods[:2], nil)
	rep.server("http", "smart HTTP")
	for _, n := range cfg.matrix.jobs {
		for _, m := range matrixMethods[:2] {
			rep.add("files", m.name, n, 1, matrixResult{wall: time.Second, landed: n, pushes: n})
		}
	}
	out := rep.render()
	for _, name := range []string{"matrix-http-files-wall.svg", "matrix-http-files-pushes.svg"} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(data), "<polyline"); n != 2 {
			t.Errorf("%s: %d lines, want 2", name, n)
		}
		if !strings.Contains(out, "]("+name+")") {
			t.Errorf("report does not link %s", name)
		}
	}
}

func TestMatrixFlags(t *testing.T) {
	t.Parallel()
	base := []string{"-git", "/bin/sh", "-refretry", "/bin/sh"}
	cfg, err := parseFlags(base, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	m := cfg.matrix
	if m.jobs.String() != "16,64,128" || m.modes.String() != "files,shared,union" || m.servers.String() != "http,gitea" ||
		m.methods.String() != strings.Join(matrixMethodNames(), ",") || m.checkout != "detached" ||
		m.pushTimeout != 0 || cfg.trialsOfMatrix() != 5 {
		t.Errorf("defaults: %+v, trials %d", m, cfg.trialsOfMatrix())
	}

	cfg, err = parseFlags(append(base, "-only", "matrix", "-matrix-jobs", "3,5", "-matrix-modes", "union", "-matrix-methods", "git,rebase",
		"-matrix-servers", "gitea", "-matrix-checkout", "sha", "-matrix-push-timeout", "30s", "-matrix-job-timeout", "2m", "-trials", "3"), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	m = cfg.matrix
	if !cfg.wants("matrix") || cfg.wants("fetch") || m.jobs.String() != "3,5" || m.modes.String() != "union" ||
		m.methods.String() != "git,rebase" || m.servers.String() != "gitea" || m.checkout != "sha" ||
		m.pushTimeout != 30*time.Second || m.jobTimeout != 2*time.Minute || cfg.trialsOfMatrix() != 3 {
		t.Errorf("parsed %+v, trials %d", m, cfg.trialsOfMatrix())
	}

	quick, err := parseFlags(append(base, "-quick"), io.Discard)
	if err != nil || quick.matrix.jobs.String() != "4" || quick.matrix.servers.String() != "http" || quick.trialsOfMatrix() != 1 || quick.trials != 2 {
		t.Errorf("-quick: %+v, trials %d, err %v", quick.matrix, quick.trialsOfMatrix(), err)
	}
	if q, err := parseFlags(append(base, "-quick", "-trials", "3", "-matrix-jobs", "6"), io.Discard); err != nil || q.trialsOfMatrix() != 3 || q.matrix.jobs.String() != "6" {
		t.Errorf("-quick with -trials 3 -matrix-jobs 6: %+v, trials %d, err %v", q.matrix, q.trialsOfMatrix(), err)
	}

	rtts := func(args ...string) string {
		t.Helper()
		c, err := parseFlags(append(slices.Clone(base), args...), io.Discard)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		return fmt.Sprint(c.matrix.roundTrips())
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "[0s]"},
		{[]string{"-matrix-latency"}, "[100ms]"},
		{[]string{"-matrix-rtt", "250ms"}, "[250ms]"},
		{[]string{"-matrix-latency", "-matrix-rtt", "0,100ms"}, "[0s 100ms]"},
	} {
		if got := rtts(tc.args...); got != tc.want {
			t.Errorf("%v: round trips %s, want %s", tc.args, got, tc.want)
		}
	}

	for _, bad := range [][]string{
		{"-matrix-modes", "files,nope"}, {"-matrix-rtt", "-1ms"}, {"-matrix-rtt", "100ms,100ms"}, {"-matrix-rtt", "fast"}, {"-matrix-methods", "gather2"}, {"-matrix-servers", "github"},
		{"-matrix-checkout", "tag"}, {"-matrix-push-timeout", "-1s"}, {"-matrix-job-timeout", "-1s"}, {"-matrix-jobs", "0"},
		{"-only", "matrixx"},
	} {
		if _, err := parseFlags(append(slices.Clone(base), bad...), io.Discard); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

// TestMatrixServerName: a server under a round trip is named for it, in the report
// and in its charts' file names, and its label says so; without one it keeps its kind's
// name, so the CPU-bound runs' charts keep theirs.
func TestMatrixServerName(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		kind string
		rtt  time.Duration
		want string
	}{{"http", 0, "http"}, {"http", 100 * time.Millisecond, "http-rtt100ms"}, {"gitea", 1500 * time.Millisecond, "gitea-rtt1.5s"}} {
		if got := matrixServerName(tc.kind, tc.rtt); got != tc.want {
			t.Errorf("%s at %v: %q, want %q", tc.kind, tc.rtt, got, tc.want)
		}
	}
	if l := rttLabel(100 * time.Millisecond); !strings.Contains(l, "delayed by a 100ms round trip") {
		t.Errorf("label %q does not state the round trip", l)
	}
	if got := roundTripsText([]time.Duration{0, 100 * time.Millisecond}); !strings.HasPrefix(got, "none (CPU-bound") ||
		!strings.HasSuffix(got, "; then 100ms per HTTP request (servers named `<kind>-rtt100ms`)") {
		t.Errorf("round trips text %q", got)
	}
}
