package runners

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// act is the GitHub Actions runner the tests use, pinned and run with go run (as
// scripts/test.sh runs actionlint); its host mode runs each job's steps on this machine.
const act = "github.com/nektos/act@v0.2.89"

// actTag is the tag the workflows use the Action at; act maps it to this checkout.
const actTag = "v1.2.3"

// actEvent is one line of act's --json log.
type actEvent struct {
	Job       string         `json:"job"`
	JobID     string         `json:"jobID"`
	Matrix    map[string]any `json:"matrix"`
	Msg       string         `json:"msg"`
	Command   string         `json:"command"`
	Content   string         `json:"content"`
	StepID    []string       `json:"stepID"`
	JobResult string         `json:"jobResult"`
	Raw       bool           `json:"raw_output"` // a line a step printed
}

// actRun is what a workflow run left: act's log, parsed.
type actRun struct {
	events []actEvent
	err    error
	stdout string
}

// runAct runs workflow (a file) with act in a throwaway repository holding it, on the
// event workflow_dispatch, in host mode: refretry/refretry@v1.2.3 is this checkout,
// actions/checkout@v4 with a ref the stand-in in testdata/checkout (the one action
// stubbed: the real one cannot be had offline), which clones results.git from the git
// server.
// The secret REFRETRY_GATHER_KEY is given, for a workflow that passes it on; extra
// are more of act's arguments (another --local-repository, an --env).
func (w *world) runAct(t *testing.T, workflow string, reports string, extra ...string) actRun {
	t.Helper()
	// The project: a clone of results.git's main with the workflow committed on top.
	// act does not run actions/checkout without a ref or repository: it copies this
	// directory into the workspace instead, as a checkout of the workflow's own commit.
	proj := filepath.Join(t.TempDir(), "project")
	w.run(t, "", "clone", "-q", w.url, proj)
	wfDir := filepath.Join(proj, ".github", "workflows")
	if err := os.MkdirAll(wfDir, 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(workflow)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(wfDir, filepath.Base(workflow)), b, 0o644); err != nil {
		t.Fatal(err)
	}
	w.run(t, proj, "add", "-A")
	w.run(t, proj, "commit", "-q", "-m", "workflow")
	standIn, err := filepath.Abs(filepath.Join("testdata", "checkout"))
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"run", act, "workflow_dispatch", "--json",
		"-W", filepath.Join(".github", "workflows", filepath.Base(workflow)),
		"-P", "ubuntu-latest=-self-hosted",
		"--no-cache-server", // it would listen beyond 127.0.0.1; no workflow here uses a cache
		"--local-repository", "refretry/refretry@" + actTag + "=" + w.root,
		"--local-repository", "actions/checkout@v4=" + standIn,
		"--env", "RUNNERS_CHECKOUT_URL=" + w.url,
		"--env", "RUNNERS_REPORT_DIR=" + reports,
		"-s", "REFRETRY_GATHER_KEY=" + gatherKey}
	out, _, err := w.runCmd(t, proj, nil, "go", append(args, extra...)...)
	run := actRun{err: err, stdout: string(out)}
	if d := os.Getenv("RUNNERS_DEBUG"); d != "" {
		_ = os.WriteFile(filepath.Join(d, filepath.Base(workflow)+".json"), out, 0o644)
	}
	for _, l := range lines(out) {
		var e actEvent
		if json.Unmarshal([]byte(l), &e) == nil {
			run.events = append(run.events, e)
		}
	}
	if len(run.events) == 0 {
		t.Fatalf("act wrote no JSON log: %v\n%s", err, tail(string(out), 4000))
	}
	return run
}

// shardReport reads what the matrix job of shard i wrote into reports (its Report
// step): the file's content, trimmed; a missing file fails the test.
func shardReport(t *testing.T, reports string, i int) func(name string) string {
	return func(name string) string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(reports, fmt.Sprintf("shard-%d", i), name))
		if err != nil {
			t.Errorf("shard %d: %v", i, err)
		}
		return strings.TrimSpace(string(b))
	}
}

// results are the jobs' outcomes, by act's job name ("<workflow>/<job>-<n>").
func (r actRun) results() map[string]string {
	res := map[string]string{}
	for _, e := range r.events {
		if e.JobResult != "" {
			res[strings.TrimSpace(e.Job)] = e.JobResult // act pads names to the longest
		}
	}
	return res
}

// shard is the matrix value shard of an event, or 0.
func (e actEvent) shard() int {
	if v, ok := e.Matrix["shard"].(float64); ok {
		return int(v)
	}
	return 0
}

// checkJobs checks that the run succeeded and that every job of jobID succeeded, one per
// shard 1..n, and that no job of another id failed.
func (r actRun) checkJobs(t *testing.T, jobID string, n int) {
	t.Helper()
	if r.err != nil {
		t.Errorf("act: %v", r.err)
	}
	shards := map[int]string{}
	for _, e := range r.events {
		if e.JobResult == "" {
			continue
		}
		if e.JobResult != "success" {
			t.Errorf("job %s: %s", e.Job, e.JobResult)
		}
		if e.JobID == jobID {
			shards[e.shard()] = e.JobResult
		}
	}
	for i := 1; i <= n; i++ {
		if shards[i] != "success" {
			t.Errorf("job %s shard %d: %q, want success", jobID, i, shards[i])
		}
	}
	if len(shards) != n {
		t.Errorf("%d jobs %s, want %d", len(shards), jobID, n)
	}
	if t.Failed() {
		t.Logf("act's log:\n%s", tail(r.stdout, 20000))
	}
}

var operationID = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// TestActGather runs testdata/gather.yml with act: 8 matrix jobs, each cloning the
// branch results, committing a file of its own and landing it with the Action's gather
// input (the Action from this checkout, nothing of it stubbed). Every job succeeds with
// the Action's outputs and step summary, every result lands once, and neither the
// job's checkout nor its temporary directory holds anything of refretry's after it.
func TestActGather(t *testing.T) {
	need(t)
	for _, backend := range []string{"files", "reftable"} {
		t.Run(backend, func(t *testing.T) {
			w := newWorld(t, backend)
			reports := t.TempDir()
			run := w.runAct(t, filepath.Join("testdata", "gather.yml"), reports)
			run.checkJobs(t, "land", 8)

			summaries := map[int]string{}
			for _, e := range run.events {
				if e.Command == "summary" && slices.Equal(e.StepID, []string{"land", "run"}) {
					summaries[e.shard()] += e.Content
				}
			}
			var want []string
			for i := 1; i <= 8; i++ {
				want = append(want, fmt.Sprintf("result of shard %d", i))
				read := shardReport(t, reports, i)
				if got := read("outcome"); got != "success" {
					t.Errorf("shard %d: the Action's step: %q", i, got)
				}
				var outs map[string]string
				if err := json.Unmarshal([]byte(read("outputs.json")), &outs); err != nil {
					t.Errorf("shard %d: outputs: %v", i, err)
				}
				if outs["result"] != "success" || outs["updated-refs"] != "refs/heads/results" ||
					!operationID.MatchString(outs["operation-id"]) {
					t.Errorf("shard %d: outputs %v", i, outs)
				}
				if n, err := strconv.Atoi(outs["attempts"]); err != nil || n < 1 {
					t.Errorf("shard %d: attempts %q", i, outs["attempts"])
				}
				// One row, this operation's, in the summary of the Action's run step.
				row := "| " + strings.ReplaceAll(outs["operation-id"], "-", `\-`) + " | success | "
				if s := summaries[i]; !strings.HasPrefix(s, "| refretry operation | result | attempts | elapsed | refs |\n") ||
					strings.Count(s, "\n| ") != 1 || !strings.Contains(s, row) {
					t.Errorf("shard %d: step summary, want one row starting %q:\n%s", i, row, s)
				}
				if got := read("status"); got != "" {
					t.Errorf("shard %d: git status --porcelain --ignored after the Action:\n%s", i, got)
				}
				if got := read("temp"); strings.Contains(strings.ToLower(got), "refretry") {
					t.Errorf("shard %d: RUNNER_TEMP after the Action:\n%s", i, got)
				}
			}
			w.checkLanded(t, want)
			w.checkNoLeftovers(t)
		})
	}
}

// TestActAutoCommit runs testdata/autocommit.yml with act: 8 matrix jobs, each with
// the Action's install-shim and push-rebase, then a step of git-auto-commit-action's
// shape (git add, git commit, a plain git push --set-upstream origin HEAD:results
// --follow-tags --atomic), the jobs at once, so that pushes lose races. The push goes
// through the shim (git on PATH is it), every job succeeds, every commit lands once, and
// each job ends on its own commit with a clean work tree.
func TestActAutoCommit(t *testing.T) {
	need(t)
	for _, backend := range []string{"files", "reftable"} {
		t.Run(backend, func(t *testing.T) {
			w := newWorld(t, backend)
			reports := t.TempDir()
			run := w.runAct(t, filepath.Join("testdata", "autocommit.yml"), reports)
			run.checkJobs(t, "commit", 8)
			var want []string
			for i := 1; i <= 8; i++ {
				want = append(want, fmt.Sprintf("result of shard %d", i))
				read := shardReport(t, reports, i)
				if got := read("outcome"); got != "success" {
					t.Errorf("shard %d: the push step: %q", i, got)
				}
				if got := read("git"); !strings.HasSuffix(got, "/refretry-shim/git") {
					t.Errorf("shard %d: git on PATH is %q, not the shim", i, got)
				}
				if got := read("head"); got != want[i-1] {
					t.Errorf("shard %d: HEAD is %q after the push, want its own commit", i, got)
				}
				if got := read("status"); got != "" {
					t.Errorf("shard %d: git status --porcelain after the push:\n%s", i, got)
				}
			}
			w.checkLanded(t, want)
			w.checkNoLeftovers(t)
		})
	}
}

// TestActAutoCommitAction runs testdata/autocommit-action.yml with act: 8 matrix jobs,
// each with the Action's install-shim, commit a file with the unmodified
// stefanzweifel/git-auto-commit-action v7.2.0 (its own fetch, checkout, add, commit and
// git push), all at once. With push-rebase every job succeeds and every commit lands
// once, through the shim; without it the push that lost a race fails the tool with
// git's own rejection, and only the jobs that succeeded have a commit on results. The
// action's source cannot be had offline: the test runs when
// REFRETRY_TEST_AUTOCOMMIT_ACTION names a checkout of its tag v7.2.0 (docs/testing.md).
func TestActAutoCommitAction(t *testing.T) {
	need(t)
	src := os.Getenv("REFRETRY_TEST_AUTOCOMMIT_ACTION")
	if src == "" {
		t.Skip("REFRETRY_TEST_AUTOCOMMIT_ACTION names no checkout of stefanzweifel/git-auto-commit-action v7.2.0")
	}
	for _, tc := range []struct {
		backend string
		rebase  bool
	}{{"files", true}, {"reftable", true}, {"reftable", false}} {
		t.Run(fmt.Sprintf("%s/push-rebase=%v", tc.backend, tc.rebase), func(t *testing.T) {
			w := newWorld(t, tc.backend)
			reports := t.TempDir()
			run := w.runAct(t, filepath.Join("testdata", "autocommit-action.yml"), reports,
				"--local-repository", "stefanzweifel/git-auto-commit-action@v7.2.0="+src,
				"--env", fmt.Sprintf("PUSH_REBASE=%v", tc.rebase))
			var landed []string
			failed := 0
			for i := 1; i <= 8; i++ {
				read := shardReport(t, reports, i)
				if got := read("git"); !strings.HasSuffix(got, "/refretry-shim/git") {
					t.Errorf("shard %d: git on PATH is %q, not the shim", i, got)
				}
				switch read("outcome") {
				case "success":
					landed = append(landed, fmt.Sprintf("result of shard %d", i))
				case "failure":
					failed++
				default:
					t.Errorf("shard %d: the action's step: %q", i, read("outcome"))
				}
			}
			if tc.rebase {
				run.checkJobs(t, "commit", 8)
				w.checkLanded(t, landed)
				if len(landed) != 8 {
					t.Errorf("%d of 8 commits landed with push-rebase", len(landed))
				}
				return
			}
			// Without the opt-in: the tool sees git's rejection, as without refretry.
			rejected := 0
			for _, e := range run.events {
				if e.Raw && (strings.Contains(e.Msg, "! [rejected]") || strings.Contains(e.Msg, "! [remote rejected]")) {
					rejected++
				}
			}
			if failed == 0 || rejected < failed {
				t.Errorf("%d jobs failed and %d lines of git's rejection in their logs: want every lost race to reach the tool as git's rejection (and at least one)\n%s",
					failed, rejected, tail(run.stdout, 4000))
			}
			w.checkLanded(t, landed)
			t.Logf("without push-rebase: %d of 8 commits landed; %d jobs failed, with %d lines of git's rejection", len(landed), failed, rejected)
		})
	}
}

// TestActExamples runs the GitHub examples as a user would copy them, unchanged, with
// act (files backend): gather.yml (8 jobs landing on results, then the same 8 again,
// as a re-run, which lands nothing twice), gather-fan-in.yml (8 jobs staging, then the
// land job, on a remote of its own) and matrix.yml (8 jobs
// pushing a result ref each, then collect). actions/checkout is the test's stand-in
// (testdata/checkout); fan-in.yml is not run: actions/upload-artifact and
// download-artifact cannot be had offline, and no action but checkout is stubbed (a
// stand-in of both would test the stand-in and act's artifact server, not the
// example, which runs no refretry: it is what gather.yml replaces).
func TestActExamples(t *testing.T) {
	need(t)
	w := newWorld(t, "files")
	examples := filepath.Join(w.root, "examples", "github")

	t.Run("gather.yml", func(t *testing.T) {
		run := w.runAct(t, filepath.Join(examples, "gather.yml"), t.TempDir())
		run.checkJobs(t, "bench", 8)
		var want []string
		reported := 0
		for i := 1; i <= 8; i++ {
			want = append(want, fmt.Sprintf("results of shard %d (run 1)", i))
		}
		for _, e := range run.events {
			if e.Raw && e.Msg == "gather result success\n" {
				reported++
			}
		}
		if reported != 8 {
			t.Errorf("%d jobs reported \"gather result success\", want 8", reported)
		}
		w.checkLanded(t, want)
		// Run again, as a re-run of the jobs: every result is there already, and every
		// job succeeds without landing it twice.
		again := w.runAct(t, filepath.Join(examples, "gather.yml"), t.TempDir())
		again.checkJobs(t, "bench", 8)
		w.checkLanded(t, want)
	})

	t.Run("gather-fan-in.yml", func(t *testing.T) {
		fw := newWorld(t, "files") // results as the seed made it: nothing of gather.yml's
		run := fw.runAct(t, filepath.Join(examples, "gather-fan-in.yml"), t.TempDir())
		run.checkJobs(t, "bench", 8)
		landed := false
		for job, r := range run.results() {
			if strings.HasSuffix(job, "/land") {
				landed = r == "success"
			}
		}
		if !landed {
			t.Errorf("the land job: %v", run.results())
		}
		var want []string
		for i := 1; i <= 8; i++ {
			want = append(want, fmt.Sprintf("results of shard %d (run 1)", i))
		}
		fw.checkLanded(t, want)
		fw.checkNoLeftovers(t)
	})

	t.Run("matrix.yml", func(t *testing.T) {
		run := w.runAct(t, filepath.Join(examples, "matrix.yml"), t.TempDir())
		run.checkJobs(t, "test", 8)
		res := run.results()
		collected := false
		for job, r := range res {
			if strings.HasSuffix(job, "/collect") {
				collected = r == "success"
			}
		}
		if !collected {
			t.Errorf("the collect job: %v", res)
		}
		refs := w.run(t, w.remote, "for-each-ref", "--format=%(refname)", "refs/ci/")
		var want []string
		for i := 1; i <= 8; i++ {
			want = append(want, fmt.Sprintf("refs/ci/1/shard-%d", i))
		}
		if got := strings.Split(refs, "\n"); !slices.Equal(got, want) {
			t.Errorf("result refs %q, want %q", got, want)
		}
		for i := 1; i <= 8; i++ {
			report := w.run(t, w.remote, "show", fmt.Sprintf("refs/ci/1/shard-%d:report-%d.txt", i, i))
			if report != fmt.Sprintf("shard %d: all tests passed", i) {
				t.Errorf("shard %d's report: %q", i, report)
			}
		}
	})
	w.checkNoLeftovers(t)
}
