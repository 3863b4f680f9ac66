package forge_test

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/refretry/refretry/failure"
	"github.com/refretry/refretry/forge"
	"github.com/refretry/refretry/internal/harness/gitea"
	"github.com/refretry/refretry/internal/harness/testutil"
)

// A real forge: Gitea 1.26 (internal/harness/gitea), whose contents API is the only
// one that writes a commit. The tests skip with one line at the default size (the
// stress tier runs them, or REFRETRY_GITEA names the binary).

// giteaForge is a running Gitea signing its API's commits with signer's key, with a
// repository "r" and a bot that may write it.
type giteaForge struct {
	inst   *gitea.Instance
	signer testutil.Signer
	token  string
}

// startGiteaForge starts Gitea with opts (its binary and git filled in), signing with
// a key of its own unless opts says which.
func startGiteaForge(t *testing.T, g testutil.Git, opts gitea.Options) *giteaForge {
	t.Helper()
	opts.Binary, opts.Git = gitea.Need(t), g.Path
	f := &giteaForge{}
	if opts.SigningKey == "" {
		f.signer = testutil.NewSigner(t, "ssh")
		opts.SigningKey = f.signer.Key
	}
	inst, err := gitea.Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(inst.Close)
	f.inst = inst
	if err := inst.CreateRepo("r"); err != nil {
		t.Fatal(err)
	}
	if f.token, err = inst.Bot("ci-bot", "r", "write:repository", "read:user"); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *giteaForge) api(client *http.Client) forge.API {
	return forge.API{Forge: "gitea", Token: f.token, Client: client}
}

// Signer is the key the instance signs with (verify takes it).
func (f *giteaForge) Signer() testutil.Signer { return f.signer }

// watch is a transport that keeps the status of every answer to a POST, and runs
// before, once, ahead of the first POST it sees.
type watch struct {
	mu       sync.Mutex
	before   func()
	statuses []int
}

func (w *watch) RoundTrip(req *http.Request) (*http.Response, error) {
	w.mu.Lock()
	var before func()
	if req.Method == http.MethodPost {
		before, w.before = w.before, nil
	}
	w.mu.Unlock()
	if before != nil {
		before()
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err == nil && req.Method == http.MethodPost {
		w.mu.Lock()
		w.statuses = append(w.statuses, resp.StatusCode)
		w.mu.Unlock()
	}
	return resp, err
}

// TestGiteaConcurrent: 16 jobs from one head land through Gitea's contents API, all
// of them; every commit on the branch is Gitea's (the bot its committer, signed with
// the instance's key), and the lost races came in Gitea's words (a 403 "cannot lock
// ref", or the 500 it withholds from the bot).
func TestGiteaConcurrent(t *testing.T) {
	t.Parallel()
	g := testutil.NewGit(t)
	f := startGiteaForge(t, g, gitea.Options{})
	initial, err := f.inst.Branch("r", "main")
	if err != nil {
		t.Fatal(err)
	}
	const n = 16
	jobs := make([]*job, n)
	for i := range jobs {
		jobs[i] = newJob(t, g, f.inst.URL("r"), map[string]string{fmt.Sprintf("results/%02d.txt", i): fmt.Sprintf("job %d\n", i)}, nil)
	}
	w := &watch{}
	outs := concurrently(jobs, func(j *job) outcome { return j.land(f.api(&http.Client{Transport: w})) })
	var all []failure.Class
	for i, o := range outs {
		all = append(all, classes(o.attempts)...)
		if o.err != nil {
			t.Errorf("job %d: %v\n%s", i, o.err, o.stderr)
		}
	}
	jobs[0].git("fetch", "-q", "origin", "main")
	commits := strings.Fields(jobs[0].git("rev-list", "FETCH_HEAD", "^"+initial))
	if len(commits) != n {
		t.Errorf("%d commits on main, want %d", len(commits), n)
	}
	for _, c := range commits {
		if who := jobs[0].git("log", "-1", "--format=%cn <%ce>", c); who != "ci-bot <ci-bot@example.invalid>" {
			t.Errorf("%s: committer %q, not the bot", c, who)
		}
		verify(t, jobs[0], f, c)
	}
	t.Logf("%d jobs: %d attempts (%d behind, %d unknown), answers to POSTs %v", n, len(all),
		count(all, failure.Behind), count(all, failure.Unknown), tally(w.statuses))
}

// TestGitea500: Gitea's unmapped 500, reproduced: the branch moves after Gitea has
// cloned it for the job's request and before it pushes the commit (the signing
// program Gitea runs in between moves it, once), so Gitea's push is a
// non-fast-forward, answered 500 with no message to the bot. The job settles the
// unknown outcome with a replay onto the new head, and lands with the other change
// kept.
func TestGitea500(t *testing.T) {
	t.Parallel()
	g := testutil.NewGit(t)
	signer := testutil.NewSigner(t, "ssh")
	dir := t.TempDir()
	program, armed, moved := filepath.Join(dir, "sign"), filepath.Join(dir, "armed"), filepath.Join(dir, "moved")
	writeExec(t, program, fmt.Sprintf("#!/bin/sh\nif [ -e %[1]s ] && [ ! -e %[2]s ]; then\n touch %[2]s\n read repo oid < %[1]s\n"+
		" %[3]s --git-dir=\"$repo\" update-ref refs/heads/main \"$oid\"\nfi\nexec ssh-keygen \"$@\"\n", armed, moved, g.Path))
	f := startGiteaForge(t, g, gitea.Options{SigningKey: signer.Key, GitConfig: map[string]string{"gpg.ssh.program": program}})
	f.signer = signer
	side := newJob(t, g, f.inst.URL("r"), map[string]string{"other.txt": "other\n"}, nil)
	side.git("push", "-q", "origin", "HEAD:refs/heads/side")
	writeExec(t, armed, f.inst.RepoPath("r")+" "+side.git("rev-parse", "HEAD")+"\n")
	j := newJob(t, g, f.inst.URL("r"), map[string]string{"mine.txt": "mine\n"}, nil)
	w := &watch{}
	o := j.land(f.api(&http.Client{Transport: w}))
	if o.err != nil {
		t.Fatalf("%v\n%s", o.err, o.stderr)
	}
	if got := classes(o.attempts); !slices.Equal(got, []failure.Class{failure.Unknown, ""}) || len(w.statuses) < 2 || w.statuses[0] != 500 {
		t.Errorf("attempts %q, answers %v; want an unknown outcome from a 500, then a landing", got, w.statuses)
	}
	j.git("fetch", "-q", "origin", "main")
	if tree := j.git("ls-tree", "--name-only", "FETCH_HEAD"); !strings.Contains(tree, "mine.txt") || !strings.Contains(tree, "other.txt") {
		t.Errorf("main has:\n%s", tree)
	}
}

// writeExec writes an executable script.
func writeExec(t *testing.T, path, script string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
}

// TestGiteaRefuses: what Gitea's contents API cannot write (a symbolic link, a new
// executable) is refused before any commit is asked for.
func TestGiteaRefuses(t *testing.T) {
	t.Parallel()
	g := testutil.NewGit(t)
	f := startGiteaForge(t, g, gitea.Options{})
	w := &watch{}
	for name, j := range map[string]*job{
		"symbolic link":  newJob(t, g, f.inst.URL("r"), nil, map[string]string{"link": "README.md"}),
		"executable bit": newJob(t, g, f.inst.URL("r"), map[string]string{"run.sh": "#!/bin/sh\n"}, nil),
	} {
		o := j.land(f.api(&http.Client{Transport: w}))
		if got := classes(o.attempts); !slices.Equal(got, []failure.Class{failure.Rejected}) || !strings.Contains(advice(o.err), name) {
			t.Errorf("%s: attempts %v: %v", name, got, o.err)
		}
	}
	if len(w.statuses) != 0 {
		t.Errorf("answers to POSTs %v, want none", w.statuses)
	}
}

func count(list []failure.Class, c failure.Class) int {
	n := 0
	for _, x := range list {
		if x == c {
			n++
		}
	}
	return n
}

// tally is statuses counted, "status×n" in order of status.
func tally(statuses []int) string {
	m := map[int]int{}
	for _, s := range statuses {
		m[s]++
	}
	keys := make([]int, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%d×%d", k, m[k]))
	}
	return strings.Join(parts, " ")
}
