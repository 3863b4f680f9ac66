package forge_test

import (
	"fmt"
	"testing"

	"github.com/refretry/refretry/forge"
	"github.com/refretry/refretry/internal/harness/forgeapi"
	"github.com/refretry/refretry/internal/harness/testutil"
)

// TestGitHubKeepsContent: through GitHub's git data API, a job's commit lands as the
// forge's own commit, signed with its key, with an executable and a symbolic link
// kept exactly; the job's HEAD ends at it, as after push --rebase.
func TestGitHubKeepsContent(t *testing.T) {
	t.Parallel()
	g := testutil.NewGit(t)
	s := forgeapi.StartGitHub(t, forgeapi.Options{})
	j := newJob(t, g, s.CloneURL(), map[string]string{"bin/run": "#!/bin/sh\necho hi\n", "data.txt": "one\n"}, map[string]string{"link": "data.txt"})
	o := j.land(forge.API{Forge: "github", URL: s.APIURL(), Token: forgeapi.AppToken})
	if o.err != nil || o.res.ExitCode != 0 {
		t.Fatalf("exit %d: %v\n%s", o.res.ExitCode, o.err, o.stderr)
	}
	head := s.Head("main")
	if o.res.Commit != head || j.git("rev-parse", "HEAD") != head {
		t.Errorf("landed %s, the branch is at %s, HEAD at %s", o.res.Commit, head, j.git("rev-parse", "HEAD"))
	}
	if tree := s.Git("ls-tree", "-r", head); !contains(tree, "100755 blob", "bin/run") || !contains(tree, "120000 blob", "link") {
		t.Errorf("modes not kept:\n%s", tree)
	}
	if who := s.Git("log", "-1", "--format=%cn <%ce>", head); who != "GitHub <noreply@github.com>" {
		t.Errorf("committer %q, want GitHub's web-flow", who)
	}
	verify(t, j, s, head)
	t.Logf("%d requests, %d attempts, route %s\n%s", o.res.Requests, o.res.Attempts, o.res.Route, o.stderr)
}

// TestGitHubConcurrent: jobs that all start from one head land every commit through
// the API, each lost race ("Update is not a fast forward") replayed onto the new
// head; every commit on the branch is the forge's, and verifies; no staging ref is
// left.
func TestGitHubConcurrent(t *testing.T) {
	t.Parallel()
	g := testutil.NewGit(t)
	s := forgeapi.StartGitHub(t, forgeapi.Options{})
	api := forge.API{Forge: "github", URL: s.APIURL(), Token: forgeapi.AppToken}
	n := 16
	jobs := make([]*job, n)
	for i := range jobs {
		jobs[i] = newJob(t, g, s.CloneURL(), map[string]string{fmt.Sprintf("results/%02d.txt", i): fmt.Sprintf("job %d\n", i)}, nil)
	}
	outs := concurrently(jobs, func(j *job) outcome { return j.land(api) })
	attempts := 0
	for i, o := range outs {
		attempts += len(o.attempts)
		if o.err != nil || o.res.ExitCode != 0 {
			t.Errorf("job %d: exit %d: %v\n%s", i, o.res.ExitCode, o.err, o.stderr)
		}
	}
	checkBranch(t, jobs[0], s, n)
	t.Logf("%d jobs: %d attempts, %d API requests (%d commits, %d ref updates), %d git requests",
		n, attempts, s.Requests(), s.Count(forgeapi.GitHubCreateCommit), s.Count(forgeapi.GitHubUpdateRef), s.GitServer().Requests())
}
