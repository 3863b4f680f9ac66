package main

import (
	"bytes"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/refretry/refretry/internal/harness/testutil"
)

// TestGatherCommandsReport: `refretry gather list|land|discard` report through the
// reporter: with --log-format=json, stderr is records only (the notes, an attempt for
// every push, a summary naming the command), and plain stderr is what it was. A job
// whose staging push fails exits with git's code.
func TestGatherCommandsReport(t *testing.T) {
	t.Parallel()
	f := newGatherFixture(t, testutil.NewGit(t))
	url := "file://" + f.remote
	// run runs refretry in the seed clone; it returns the exit code, stdout and stderr.
	run := func(args ...string) (int, string, string) {
		cmd := f.command(f.seed, f.g.Path, nil, args...)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		return childExit(cmd.Run()), out.String(), errOut.String()
	}
	// records is the shape of the JSON records on stderr: each one's msg, and its
	// kind, class and final for a note or an attempt; the summary is returned whole.
	records := func(stderr string) ([]string, map[string]any) {
		var shape []string
		var summary map[string]any
		for _, rec := range jsonLines(t, stderr) {
			switch rec["msg"] {
			case "note":
				shape = append(shape, fmt.Sprint("note ", rec["kind"]))
			case "attempt":
				shape = append(shape, fmt.Sprint("attempt ", rec["attempt"], " class=", rec["class"], " final=", rec["final"]))
			case "summary":
				summary = rec
				shape = append(shape, "summary")
			}
		}
		return shape, summary
	}

	missing := "nothing of that id is staged for refs/heads/main"
	code, stdout, stderr := run("gather", "discard", url, "main", "nosuch")
	if want := "refretry: nosuch: " + missing + "\n"; code != 128 || stdout != "" || stderr != want {
		t.Errorf("discard, plain: exit %d, stdout %q, stderr %q; want 128 and %q", code, stdout, stderr, want)
	}
	code, stdout, stderr = run("--log-format=json", "gather", "discard", url, "main", "nosuch")
	shape, summary := records(stderr)
	if want := []string{"attempt 1 class=other final=true", "summary"}; code != 128 || stdout != "" || !slices.Equal(shape, want) {
		t.Errorf("discard, json: exit %d, stdout %q, records %q; want 128 and %q\n%s", code, stdout, shape, want, stderr)
	}
	if summary["command"] != "gather discard" || summary["result"] != "error" || summary["exit_code"] != 128.0 ||
		summary["advice"] != "nosuch: "+missing {
		t.Errorf("discard, json: summary %v", summary)
	}

	// A commit staged by a job that is gone, long ago (its id's time is 2024's); land
	// takes the lease, notes the commit's age, lands it in one wave and lets the lease
	// go: three pushes.
	job := f.clone("job")
	f.git(job, "push", "-q", "origin", "HEAD:refs/refretry/gather/main/0193aaaa-0000-7000-8000-000000000001")
	code, stdout, stderr = run("--log-format=json", "gather", "list", url, "main")
	shape, summary = records(stderr)
	if want := []string{"attempt 1 class=<nil> final=true", "summary"}; code != 0 || !slices.Equal(shape, want) ||
		!strings.Contains(stdout, "0193aaaa-0000-7000-8000-000000000001  staged") {
		t.Errorf("list, json: exit %d, stdout %q, records %q; want 0, the staged id and %q\n%s", code, stdout, shape, want, stderr)
	}
	if summary["command"] != "gather list" || summary["result"] != "success" {
		t.Errorf("list, json: summary %v", summary)
	}
	code, stdout, stderr = run("--log-format=json", "gather", "land", url, "main")
	shape, summary = records(stderr)
	want := []string{"note gather", "attempt 1 class=<nil> final=true", "note gather", "attempt 2 class=<nil> final=true",
		"note gather", "attempt 3 class=<nil> final=true", "note gather", "summary"}
	if code != 0 || stdout != "" || !slices.Equal(shape, want) {
		t.Errorf("land, json: exit %d, stdout %q, records %q; want 0 and %q\n%s", code, stdout, shape, want, stderr)
	}
	if summary["command"] != "gather land" || summary["result"] != "success" || summary["attempts"] != 3.0 ||
		summary["level"] != "INFO" || !strings.Contains(stderr, `"text":"landed 1 staged commits in 1 gathers"`) {
		t.Errorf("land, json: summary %v\n%s", summary, stderr)
	}
	if log := f.git(f.remote, "log", "-1", "--format=%s", "main"); log != "result of job" {
		t.Errorf("main's tip is %q, want the staged commit", log)
	}

	// The staging push fails for good: git push exits 128, and so does the job.
	nowhere := "file://" + filepath.Join(f.root, "nowhere.git")
	code, out := f.refretry(f.clone("lost"), f.g.Path, nil, "push", "--gather", nowhere, "HEAD:main")
	if code != 128 || !strings.Contains(out, "does not appear to be a git repository") {
		t.Errorf("a staging push that failed: exit %d, want git's 128\n%s", code, out)
	}
}
