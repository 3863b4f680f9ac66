package forge_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/refretry/refretry/failure"

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
	n := testutil.Scale(t, 8, 16)
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

// faultCase is one fault on the first request of a kind, and what the run makes of
// it.
type faultCase struct {
	name    string
	token   string
	files   map[string]string
	kind    forgeapi.Kind
	fault   forgeapi.Fault
	classes []failure.Class // the attempts' ("" for a success)
	code    int
	commits int    // commits on main over the first when it ends
	says    string // in stderr or the failure's advice
}

// TestGitHubFaults: each of GitHub's answers, injected on the first request of its
// kind, is classified and acted on as docs/push.md says: a lost race replayed, a
// limit waited for, an answer lost after it was applied found on the branch (and
// not landed twice), a rule or a token that may not write final at once.
func TestGitHubFaults(t *testing.T) {
	t.Parallel()
	g := testutil.NewGit(t)
	file, exe := map[string]string{"a.txt": "a\n"}, map[string]string{"run.sh": "#!/bin/sh\n"}
	ok := []failure.Class{""}
	cases := []faultCase{
		{"lost race", forgeapi.AppToken, file, forgeapi.GitHubUpdateRef, forgeapi.LandFirst("main"), []failure.Class{failure.Behind, ""}, 0, 2, ""},
		{"secondary limit", forgeapi.AppToken, file, forgeapi.GitHubCreateCommit, forgeapi.GitHubSecondaryLimit(429, 1), []failure.Class{failure.Transport, ""}, 0, 1, ""},
		{"answer lost", forgeapi.AppToken, file, forgeapi.GitHubUpdateRef, forgeapi.Fault{Status: 502, Apply: true, Body: "{}"}, []failure.Class{failure.Unknown, ""}, 0, 1, "already has the job's changes"},
		{"ruleset", forgeapi.AppToken, file, forgeapi.GitHubUpdateRef, forgeapi.GitHubRuleViolation("Changes must be made through a pull request."), []failure.Class{failure.Declined}, 1, 0, "Changes must be made through a pull request."},
		{"read-only token", forgeapi.ReadOnlyToken, file, "", forgeapi.Fault{}, []failure.Class{failure.Auth}, 128, 0, "Resource not accessible by integration"},
		{"GraphQL lost race", forgeapi.UserToken, file, forgeapi.GitHubCommitOnBranch, forgeapi.LandFirst("main"), []failure.Class{failure.Behind, ""}, 0, 2, "createCommitOnBranch"},
		{"GraphQL limit", forgeapi.UserToken, file, forgeapi.GitHubCommitOnBranch, forgeapi.GraphQLRateLimited(time.Now()), []failure.Class{failure.Transport, ""}, 0, 1, ""},
		{"person's token, an executable", forgeapi.UserToken, exe, "", forgeapi.Fault{}, ok, 0, 1, "not signed by GitHub"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := forgeapi.StartGitHub(t, forgeapi.Options{Inject: func(r forgeapi.Request) *forgeapi.Fault {
				if r.Kind == c.kind && r.KindN == 1 {
					return &c.fault
				}
				return nil
			}})
			initial := s.Head("main")
			j := newJob(t, g, s.CloneURL(), c.files, nil)
			var notes []string
			r := j.runner(forge.API{Forge: "github", URL: s.APIURL(), Token: c.token})
			r.Note = func(_, msg string) { notes = append(notes, msg) }
			o := j.landWith(r)
			said := o.stderr + strings.Join(notes, "\n") + advice(o.err)
			if got := classes(o.attempts); !slices.Equal(got, c.classes) || o.res.ExitCode != c.code || !strings.Contains(said, c.says) {
				t.Errorf("attempts %v, exit %d (want %v, %d, saying %q): %v\n%s", got, o.res.ExitCode, c.classes, c.code, c.says, o.err, said)
			}
			if got := s.Git("rev-list", "--count", "main", "^"+initial); got != fmt.Sprint(c.commits) {
				t.Errorf("%s commits landed, want %d", got, c.commits)
			}
		})
	}
}

// advice is err's failure's advice, "" when it has none.
func advice(err error) string {
	var f *failure.Error
	if errors.As(err, &f) {
		return f.Advice
	}
	return ""
}
