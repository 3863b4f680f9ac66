package forge_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/refretry/refretry/failure"
	"github.com/refretry/refretry/forge"
	"github.com/refretry/refretry/internal/harness/forgeapi"
	"github.com/refretry/refretry/internal/harness/testutil"
	"github.com/refretry/refretry/retry"
)

// sections is a file of n lines that n jobs each change one of ("job i: -" to "job
// i: done"), three lines apart, so that their changes merge.
func sections(n int, done func(i int) bool) string {
	var b strings.Builder
	for i := range n {
		state := "-"
		if done(i) {
			state = "done"
		}
		fmt.Fprintf(&b, "job %d: %s\n.\n.\n.\n", i, state)
	}
	return b.String()
}

// gitLabJobEnv is GitLab CI's environment for a job of project acme/widgets on s,
// its job token included.
func gitLabJobEnv(s *forgeapi.Server) []string {
	return []string{"GITLAB_CI=true", "CI_API_V4_URL=" + s.APIURL(), "CI_PROJECT_PATH=acme/widgets", "CI_PROJECT_ID=1",
		"CI_JOB_TOKEN=" + forgeapi.JobToken}
}

// TestGitLabGuard: GitLab has no compare-and-swap on the branch, so what keeps a job
// from overwriting another's change is last_commit_id on every file it updates.
// Another writer changes the job's file between the job's fetch and its commit: the
// commit is refused ("The file has changed …"), the job replays onto the new head
// and lands with both changes. Another writer's change to another file does not stop
// the commit, which lands on the newer head with both. The job's token is GitLab
// CI's own (CI_JOB_TOKEN, sent as JOB-TOKEN), found with the API from CI's
// environment; the shallow checkout's history cannot tell when a file last changed,
// so GitLab is asked.
func TestGitLabGuard(t *testing.T) {
	t.Parallel()
	for _, other := range []string{"shared.txt", "other.txt"} {
		t.Run(other, func(t *testing.T) {
			t.Parallel()
			var s *forgeapi.Server
			s = forgeapi.StartGitLab(t, forgeapi.Options{Inject: func(r forgeapi.Request) *forgeapi.Fault {
				if r.Kind == forgeapi.GitLabCreateCommit && r.KindN == 1 {
					s.Land("main", other, sections(4, func(i int) bool { return i == 3 }))
				}
				return nil
			}})
			if _, err := s.Land("main", "shared.txt", sections(4, func(int) bool { return false })); err != nil {
				t.Fatal(err)
			}
			j := newJob(t, testutil.NewGit(t), s.CloneURL(), map[string]string{"shared.txt": sections(4, func(i int) bool { return i == 0 })}, nil)
			j.env = append(j.env, gitLabJobEnv(s)...)
			o := j.land(forge.API{})
			if o.err != nil {
				t.Fatalf("%v\n%s", o.err, o.stderr)
			}
			want := []failure.Class{failure.Behind, ""}
			if other == "other.txt" {
				want = []failure.Class{""}
			}
			if got := classes(o.attempts); !slices.Equal(got, want) {
				t.Errorf("attempts %v, want %v", got, want)
			}
			if got, both := s.Git("show", "main:shared.txt"), sections(4, func(i int) bool { return i == 0 || i == 3 && other == "shared.txt" }); got != strings.TrimSpace(both) {
				t.Errorf("shared.txt:\n%s\nwant\n%s", got, both)
			}
			if s.Count(forgeapi.GitLabGetFile) == 0 {
				t.Error("GitLab was not asked when shared.txt last changed")
			}
		})
	}
}

// classes are the attempts' failure classes ("" for a success).
func classes(attempts []retry.Attempt) []failure.Class {
	var c []failure.Class
	for _, a := range attempts {
		var f *failure.Error
		if errors.As(a.Err, &f) {
			c = append(c, f.Class)
		} else {
			c = append(c, "")
		}
	}
	return c
}

// TestGitLabConcurrent: jobs from one head, each changing its own line of one file
// and creating a file of its own, all land through GitLab's API; the file has every
// job's line (no job's update overwrote another's), and every commit is GitLab's.
func TestGitLabConcurrent(t *testing.T) {
	t.Parallel()
	s := forgeapi.StartGitLab(t, forgeapi.Options{})
	n := testutil.Scale(t, 6, 16)
	if _, err := s.Land("main", "shared.txt", sections(n, func(int) bool { return false })); err != nil {
		t.Fatal(err)
	}
	g := testutil.NewGit(t)
	jobs := make([]*job, n)
	for i := range jobs {
		jobs[i] = newJob(t, g, s.CloneURL(), map[string]string{"shared.txt": sections(n, func(k int) bool { return k == i }),
			fmt.Sprintf("results/%d.txt", i): "ok\n"}, nil)
	}
	api := forge.API{Forge: "gitlab", URL: s.APIURL(), Token: forgeapi.GitLabToken}
	behind := 0
	for i, o := range concurrently(jobs, func(j *job) outcome { return j.land(api) }) {
		if o.err != nil {
			t.Errorf("job %d: %v\n%s", i, o.err, o.stderr)
		}
		behind += strings.Count(fmt.Sprint(classes(o.attempts)), string(failure.Behind))
	}
	if got, want := s.Git("show", "main:shared.txt"), strings.TrimSpace(sections(n, func(int) bool { return true })); got != want {
		t.Errorf("shared.txt lost a job's line:\n%s", got)
	}
	if got := s.Git("log", "--format=%cn", "main", "-"+fmt.Sprint(n)); strings.Count(got, "GitLab User") != n {
		t.Errorf("committers of the last %d commits:\n%s", n, got)
	}
	t.Logf("%d jobs: %d commit requests, %d refused as behind", n, s.Count(forgeapi.GitLabCreateCommit), behind)
}

// TestGitLabModes: GitLab's commits API writes an executable bit (a chmod action
// after the file's creation) and cannot write a symbolic link, which is refused
// before any commit is asked for.
func TestGitLabModes(t *testing.T) {
	t.Parallel()
	g := testutil.NewGit(t)
	s := forgeapi.StartGitLab(t, forgeapi.Options{})
	api := forge.API{Forge: "gitlab", URL: s.APIURL(), Token: forgeapi.GitLabToken}
	if o := newJob(t, g, s.CloneURL(), map[string]string{"run.sh": "#!/bin/sh\n"}, nil).land(api); o.err != nil {
		t.Fatalf("%v\n%s", o.err, o.stderr)
	}
	if tree := s.Git("ls-tree", "main"); !contains(tree, "100755 blob", "run.sh") {
		t.Errorf("the executable bit was lost:\n%s", tree)
	}
	o := newJob(t, g, s.CloneURL(), nil, map[string]string{"link": "run.sh"}).land(api)
	var f *failure.Error
	if !errors.As(o.err, &f) || f.Class != failure.Rejected || o.res.ExitCode != 1 || !strings.Contains(o.stderr+f.Advice, "symbolic link") {
		t.Errorf("a symbolic link through GitLab: exit %d, %v\n%s", o.res.ExitCode, o.err, o.stderr)
	}
	if n := s.Count(forgeapi.GitLabCreateCommit); n != 1 {
		t.Errorf("%d commit requests, want the first job's only", n)
	}
}
