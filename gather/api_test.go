package gather_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/refretry/refretry/failure"
	"github.com/refretry/refretry/forge"
	"github.com/refretry/refretry/gather"
	"github.com/refretry/refretry/internal/harness/forgeapi"
	"github.com/refretry/refretry/internal/harness/testutil"
)

// forgeJob is a job's depth-1 clone of s's main, detached, with a commit adding the
// file name.
func forgeJob(t *testing.T, g testutil.Git, s *forgeapi.Server, name string) job {
	t.Helper()
	root := t.TempDir()
	j := job{dir: filepath.Join(root, "w"), env: testutil.NoMaintenanceEnv(t, root)}
	run(t, g, root, j.env, "clone", "-q", "--depth=1", "--branch=main", s.CloneURL(), j.dir)
	run(t, g, j.dir, j.env, "checkout", "-q", "--detach")
	write(t, filepath.Join(j.dir, "results", name), name+"\n")
	run(t, g, j.dir, j.env, "add", "-A")
	run(t, g, j.dir, j.env, "commit", "-q", "-m", "result of "+name)
	return j
}

// githubAPI is s's API with its App token, through client (nil: the default).
func githubAPI(s *forgeapi.Server, client *http.Client) *forge.API {
	return &forge.API{Forge: "github", URL: s.APIURL(), Token: forgeapi.AppToken, Client: client}
}

// checkLanded checks that s's main has, since initial, every one of ids once in its
// Refretry-Gather trailers and every job's file, that each commit since initial is
// the forge's and verifies with its key (in the job clone dir), and that nothing of
// refretry's is left on the remote. It returns the number of those commits.
func checkLanded(t *testing.T, g testutil.Git, s *forgeapi.Server, dir string, env []string, initial string, ids, files []string) int {
	t.Helper()
	trailers := strings.Fields(s.Git("log", "--format=%(trailers:key="+gather.Trailer+",valueonly)", "main", "^"+initial))
	for _, id := range ids {
		if n := strings.Count(" "+strings.Join(trailers, " ")+" ", " "+id+" "); n != 1 {
			t.Errorf("%s is in %d trailers on main, want 1", id, n)
		}
	}
	tree := s.Git("ls-tree", "-r", "--name-only", "main")
	for _, f := range files {
		if !strings.Contains(tree, "results/"+f+"\n") && !strings.HasSuffix(tree, "results/"+f) {
			t.Errorf("main lacks results/%s", f)
		}
	}
	run(t, g, dir, env, "fetch", "-q", "origin", "main")
	commits := strings.Fields(s.Git("rev-list", "main", "^"+initial))
	for _, c := range commits {
		if who := s.Git("log", "-1", "--format=%cn", c); who != "GitHub" {
			t.Errorf("%s: committer %q, not the forge", c, who)
		}
		cmd := append(s.Signer().ConfigArgs(), "verify-commit", c)
		run(t, g, dir, append(env[:len(env):len(env)], s.Signer().Env()...), cmd...)
	}
	if left := s.Git("for-each-ref", "refs/refretry/"); left != "" {
		t.Errorf("refretry refs left on the remote:\n%s", left)
	}
	return len(commits)
}

// TestGatherAPI: jobs that all push --gather --api at once (64 at the stress size)
// land through the fake GitHub's API: every job once, in commits the forge made and
// signed, about one API commit a wave, far below 1.5 a job.
func TestGatherAPI(t *testing.T) {
	t.Parallel()
	g := testutil.NewGit(t)
	s := forgeapi.StartGitHub(t, forgeapi.Options{})
	initial := s.Head("main")
	n := testutil.Scale(t, 16, 64)
	jobs, names := make([]job, n), make([]string, n)
	for i := range jobs {
		names[i] = fmt.Sprintf("job-%02d", i)
		jobs[i] = forgeJob(t, g, s, names[i])
	}
	r := &remote{t: t, g: g}
	out := together(t, jobs, r, func(i int, gr *gather.Runner) { gr.API, gr.Key = githubAPI(s, nil), key })
	var ids []string
	waves, landings := 0, 0
	for i, o := range out {
		if o.err != nil || !o.res.Landed {
			t.Errorf("job %d: landed %v: %v", i, o.res.Landed, o.err)
		}
		ids, waves, landings = append(ids, o.res.ID), waves+o.res.Waves, landings+o.res.Landings
	}
	commits := checkLanded(t, g, s, jobs[0].dir, jobs[0].env, initial, ids, names)
	made := s.Count(forgeapi.GitHubCreateCommit)
	if made*2 > n*3 {
		t.Errorf("%d API commits for %d jobs: more than 1.5 a job", made, n)
	}
	t.Logf("%d jobs: %d waves, %d landings asked, %d API commits made (%.2f a job), %d on main, %d API requests",
		n, waves, landings, made, float64(made)/float64(n), commits, s.Requests())
}

// key is the gather key of the tests' pipelines.
var key = []byte("0123456789abcdef0123456789abcdef")

// TestGatherAPIAnswerLost: the forge applies the wave's commit and its answer is
// lost (a 502 after the update): the gatherer looks again, finds the wave's ids in
// the branch's trailers, and deletes their staged refs without landing them again.
func TestGatherAPIAnswerLost(t *testing.T) {
	t.Parallel()
	g := testutil.NewGit(t)
	s := forgeapi.StartGitHub(t, forgeapi.Options{Inject: func(r forgeapi.Request) *forgeapi.Fault {
		if r.Kind == forgeapi.GitHubUpdateRef && r.KindN == 1 {
			return &forgeapi.Fault{Status: http.StatusBadGateway, Apply: true, Body: "{}"}
		}
		return nil
	}})
	initial := s.Head("main")
	j := forgeJob(t, g, s, "alone")
	res, err := j.runner(&remote{t: t, g: g}, func(gr *gather.Runner) { gr.API = githubAPI(s, nil) }).Run(context.Background(), pushArgs, nil, nil, nil)
	if err != nil || !res.Landed || res.Landings != 1 {
		t.Fatalf("landed %v after %d landings: %v", res.Landed, res.Landings, err)
	}
	if n := checkLanded(t, g, s, j.dir, j.env, initial, []string{res.ID}, []string{"alone"}); n != 1 {
		t.Errorf("%d commits on main, want 1", n)
	}
}

// dropAfter is a transport that loses the answer to the first PATCH (the branch's
// update, which the forge applies) and then runs killed: the gatherer is gone before
// it could clean up.
type dropAfter struct {
	once   sync.Once
	killed func()
}

func (d *dropAfter) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if req.Method != http.MethodPatch {
		return resp, err
	}
	dropped := false
	d.once.Do(func() { dropped = true })
	if !dropped {
		return resp, err
	}
	if resp != nil {
		resp.Body.Close()
	}
	d.killed()
	return nil, errors.New("connection reset, and the gatherer killed")
}

// TestGatherAPIKilled: a gatherer killed after the forge landed its wave and before
// it deleted the wave's staged refs leaves them staged and the lease at the wave's
// commit. The next job takes the lease over, reads which ids of that wave are on the
// branch (their trailers) and deletes their staged refs without landing them again;
// then it lands its own. Every job's change is on the branch once.
func TestGatherAPIKilled(t *testing.T) {
	t.Parallel()
	g := testutil.NewGit(t)
	s := forgeapi.StartGitHub(t, forgeapi.Options{})
	initial := s.Head("main")
	r := &remote{t: t, g: g}
	b := forgeJob(t, g, s, "b")
	bres, err := b.runner(r, func(gr *gather.Runner) { gr.API, gr.NoWait = githubAPI(s, nil), true }).Run(context.Background(), pushArgs, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, kill := context.WithCancel(context.Background())
	a := forgeJob(t, g, s, "a")
	ares, err := a.runner(r, func(gr *gather.Runner) {
		gr.API = githubAPI(s, &http.Client{Transport: &dropAfter{killed: kill}})
	}).Run(ctx, pushArgs, nil, nil, nil)
	if err == nil || s.Git("for-each-ref", "--count=1", "refs/refretry/lease/") == "" {
		t.Fatalf("the killed gatherer: %v; the lease must stay at its wave", err)
	}
	c := forgeJob(t, g, s, "c")
	cres, err := c.runner(r, func(gr *gather.Runner) { gr.API, gr.LeaseTimeout = githubAPI(s, nil), 300*time.Millisecond }).
		Run(context.Background(), pushArgs, nil, nil, nil)
	if err != nil || !cres.Landed {
		t.Fatalf("the job after: landed %v: %v", cres.Landed, err)
	}
	if n := checkLanded(t, g, s, c.dir, c.env, initial, []string{ares.ID, bres.ID, cres.ID}, []string{"a", "b", "c"}); n != 2 {
		t.Errorf("%d commits on main, want 2 (the killed gatherer's wave, and c's)", n)
	}
}

// TestGatherAPIRefusesEarly: through GitLab's API, which cannot write a symbolic
// link, a job whose commit adds one fails before it stages anything (a staged commit
// no wave could land would stop every wave that took it), saying why.
func TestGatherAPIRefusesEarly(t *testing.T) {
	t.Parallel()
	g := testutil.NewGit(t)
	s := forgeapi.StartGitLab(t, forgeapi.Options{})
	j := forgeJob(t, g, s, "a")
	testutil.WriteFiles(t, j.dir, nil, map[string]string{"link": "results/a"})
	run(t, g, j.dir, j.env, "add", "link")
	run(t, g, j.dir, j.env, "commit", "-q", "--amend", "--no-edit")
	api := &forge.API{Forge: "gitlab", URL: s.APIURL(), Token: forgeapi.GitLabToken}
	res, err := j.runner(&remote{t: t, g: g}, func(gr *gather.Runner) { gr.API = api }).Run(context.Background(), pushArgs, nil, nil, nil)
	var f *failure.Error
	if !errors.As(err, &f) || f.Class != failure.Rejected || res.ExitCode != 1 || !strings.Contains(f.Message, "symbolic link") {
		t.Errorf("exit %d: %v, want a refusal of the symbolic link", res.ExitCode, err)
	}
	if res.Staged != "" || s.Git("for-each-ref", "refs/refretry/") != "" {
		t.Errorf("staged %q; refs on the remote:\n%s", res.Staged, s.Git("for-each-ref", "refs/refretry/"))
	}
}
