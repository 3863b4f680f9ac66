package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/refretry/refretry/internal/harness/forgeapi"
	"github.com/refretry/refretry/internal/harness/testutil"
)

// apiJob is one job of TestPushAPI: its clone and what its run left.
type apiJob struct {
	dir, log string
	code     int
	out      string
}

// TestPushAPI: 16 jobs in GitHub Actions, from one head, run `refretry push --api
// origin HEAD:main` at once against the fake GitHub, with the job's GITHUB_TOKEN and
// GITHUB_API_URL from the environment: every job lands, every commit on the branch
// is the forge's and verifies with its key, each job's JSON log has a record for
// every attempt and a summary counting them, and the token is nowhere in what
// refretry wrote. A token that may not write ends with exit 128 and the forge's
// answer, the token still unsaid.
func TestPushAPI(t *testing.T) {
	t.Parallel()
	s, f, initial := newAPIFixture(t)
	g := f.g
	env := []string{"GITHUB_ACTIONS=true", "GITHUB_API_URL=" + s.APIURL(), "GITHUB_TOKEN=" + forgeapi.AppToken}
	jobs := make([]*apiJob, 16)
	for i := range jobs {
		jobs[i] = &apiJob{dir: f.clone(fmt.Sprintf("job-%02d", i)), log: filepath.Join(f.root, fmt.Sprintf("log-%02d.jsonl", i))}
	}
	testutil.Together(len(jobs), func(i int) struct{} {
		j := jobs[i]
		j.code, j.out = f.refretry(j.dir, g.Path, env, "--log-file", j.log, "push", "--api", "origin", "HEAD:main")
		return struct{}{}
	})
	attempts := 0
	for i, j := range jobs {
		if j.code != 0 {
			t.Errorf("job %d: exit %d\n%s", i, j.code, j.out)
		}
		attempts += checkAPILog(t, j, forgeapi.AppToken)
	}
	commits := strings.Fields(s.Git("rev-list", "main", "^"+initial))
	if len(commits) != len(jobs) {
		t.Errorf("%d commits on main, want %d", len(commits), len(jobs))
	}
	f.git(jobs[0].dir, "fetch", "-q", "origin", "main")
	for _, c := range commits {
		if who := s.Git("log", "-1", "--format=%cn", c); who != "GitHub" {
			t.Errorf("%s: committer %q", c, who)
		}
		verifyIn(t, g, jobs[0].dir, s.Signer(), c)
	}
	t.Logf("%d jobs: %d attempts, %d API requests (%d commits made, %d ref updates)", len(jobs), attempts, s.Requests(),
		s.Count(forgeapi.GitHubCreateCommit), s.Count(forgeapi.GitHubUpdateRef))

	ro := &apiJob{dir: f.clone("read-only"), log: filepath.Join(f.root, "read-only.jsonl")}
	roEnv := append(env[:2:2], "GITHUB_TOKEN="+forgeapi.ReadOnlyToken)
	ro.code, ro.out = f.refretry(ro.dir, g.Path, roEnv, "--log-file", ro.log, "push", "--api", "origin", "HEAD:main")
	if ro.code != 128 || !strings.Contains(ro.out, "Resource not accessible by integration") {
		t.Errorf("a read-only token: exit %d\n%s", ro.code, ro.out)
	}
	checkAPILog(t, ro, forgeapi.ReadOnlyToken)
}

// newAPIFixture is a fake GitHub, a gather fixture whose clones are of its repository,
// and the repository's main at the start.
func newAPIFixture(t *testing.T) (*forgeapi.Server, *gatherFixture, string) {
	t.Helper()
	f := newGatherFixture(t, testutil.NewGit(t))
	s := forgeapi.StartGitHub(t, forgeapi.Options{})
	f.url = s.CloneURL()
	return s, f, s.Head("main")
}

// checkAPILog checks j's JSON log: attempt records numbered 1 to n, the last one
// final, and a summary of n attempts; and that neither it nor j's output holds token.
// It returns n.
func checkAPILog(t *testing.T, j *apiJob, token string) int {
	t.Helper()
	b, err := os.ReadFile(j.log)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), token) || strings.Contains(j.out, token) {
		t.Errorf("the token is in refretry's output or log:\n%s\n%s", j.out, b)
	}
	n, final, summarized := 0, false, -1.0
	for _, rec := range jsonLines(t, string(b)) {
		switch rec["msg"] {
		case "attempt":
			n++
			if rec["attempt"] != float64(n) {
				t.Errorf("attempt record %v, want number %d", rec, n)
			}
			final = rec["final"] == true
		case "summary":
			summarized, _ = rec["attempts"].(float64)
		}
	}
	if n == 0 || !final || summarized != float64(n) {
		t.Errorf("%d attempt records (last final: %v), summary of %v attempts:\n%s", n, final, summarized, b)
	}
	return n
}

// verifyIn checks oid's signature with git verify-commit in dir, trusting signer.
func verifyIn(t *testing.T, g testutil.Git, dir string, signer testutil.Signer, oid string) {
	t.Helper()
	cmd := exec.Command(g.Path, append(signer.ConfigArgs(), "verify-commit", oid)...)
	cmd.Dir, cmd.Env = dir, append(testutil.NoMaintenanceEnv(t, t.TempDir()), signer.Env()...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("git verify-commit %s: %v\n%s", oid, err, out)
	}
}

// TestPushAPIConfig: a remote the API cannot be found from, or no token, ends push
// --api before any request, with exit 128, one line saying what to set, and no ref
// changed on either side.
func TestPushAPIConfig(t *testing.T) {
	t.Parallel()
	s, f, initial := newAPIFixture(t)
	g := f.g
	// Outside a CI, so that refretry prints its plain lines: the forge and the API's
	// root are given.
	api := []string{"REFRETRY_API_URL=" + s.APIURL()}
	for _, tt := range []struct {
		name, url string
		env       []string
		want      string
	}{
		{"file remote", "file:///srv/git/o/n.git", append(api, "GITHUB_TOKEN="+forgeapi.AppToken),
			"refretry: push --api: the remote file:///srv/git/o/n.git is not an http(s) or ssh URL: push --api finds the forge's API from it\n"},
		{"no token", "", api,
			"refretry: push --api: no token for github's API: set REFRETRY_API_TOKEN (or the CI's own, GITHUB_TOKEN)\n"},
	} {
		dir := f.clone(strings.ReplaceAll(tt.name, " ", "-"))
		if tt.url != "" {
			f.git(dir, "remote", "set-url", "origin", tt.url)
		}
		before := f.git(dir, "for-each-ref", "--format=%(refname) %(objectname)")
		code, out := f.refretry(dir, g.Path, tt.env, "push", "--api", "--forge", "github", "origin", "HEAD:main")
		if code != 128 || out != tt.want {
			t.Errorf("%s: exit %d, output %q; want 128, %q", tt.name, code, out, tt.want)
		}
		if after := f.git(dir, "for-each-ref", "--format=%(refname) %(objectname)"); after != before {
			t.Errorf("%s: the clone's refs changed:\n%s\nto\n%s", tt.name, before, after)
		}
	}
	if s.Requests() != 0 || s.Head("main") != initial {
		t.Errorf("%d requests to the API, main %s (was %s): want none, unchanged", s.Requests(), s.Head("main"), initial)
	}
}

// TestPushAPISSH: with an ssh remote (git fetches and pushes over ssh with the job's
// key), push --api calls the API of the remote's host and lands the commit, which is
// the forge's. The ssh client here runs the remote's git command in place, as git's
// own test suite does, with the git under test.
func TestPushAPISSH(t *testing.T) {
	t.Parallel()
	s, f, initial := newAPIFixture(t)
	g := f.g
	dir := f.clone("job")
	fakeSSH := filepath.Join(f.root, "fake-ssh")
	script := "#!/bin/sh\n# <host> <command>, as GIT_SSH_VARIANT=simple passes them\nPATH=$(\"$REAL_GIT\" --exec-path):$PATH exec sh -c \"$2\"\n"
	if err := os.WriteFile(fakeSSH, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	f.git(dir, "remote", "set-url", "origin", "git@github.com:"+s.Dir())
	env := []string{"GIT_SSH_COMMAND=" + fakeSSH, "GIT_SSH_VARIANT=simple", "REFRETRY_API_URL=" + s.APIURL(), "GITHUB_TOKEN=" + forgeapi.AppToken}
	code, out := f.refretry(dir, g.Path, env, "push", "--api", "origin", "HEAD:main")
	head := s.Head("main")
	if code != 0 || s.Count(forgeapi.GitHubCreateCommit) != 1 || s.Git("rev-parse", head+"^") != initial {
		t.Fatalf("exit %d, %d commits made, main %s on %s:\n%s", code, s.Count(forgeapi.GitHubCreateCommit), head, initial, out)
	}
	if who := s.Git("log", "-1", "--format=%cn", head); who != "GitHub" || !strings.Contains(out, "through GitHub's git data API") {
		t.Errorf("main's commit by %q, output:\n%s", who, out)
	}
	if left := s.Git("for-each-ref", "refs/refretry/"); left != "" {
		t.Errorf("left on the remote: %s", left)
	}
}
