package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/refretry/refretry/internal/harness/gitserver"
	"github.com/refretry/refretry/internal/harness/testutil"
)

// pushSetup is a client repository with a bare origin served by the same git, and
// another clone that has moved origin's main ahead of the client.
type pushSetup struct {
	client *testutil.Repo
	remote string
}

// addOrigin makes a bare repository with c's git and backend, adds it to c as origin
// (over file://), and returns its path.
func addOrigin(t *testing.T, c *testutil.Repo, backend string) string {
	t.Helper()
	remote := filepath.Join(t.TempDir(), "remote.git")
	args := []string{"init", "-q", "--bare", "-b", "main"}
	if backend == "reftable" {
		args = append(args, "--ref-format=reftable")
	}
	c.Run(append(args, remote)...)
	c.Run("remote", "add", "origin", "file://"+remote)
	return remote
}

func newPushSetup(t *testing.T, g testutil.Git, backend string) pushSetup {
	t.Helper()
	c := testutil.NewRepo(t, g, backend)
	remote := addOrigin(t, c, backend)
	c.Run("push", "-q", "origin", "main", "main:side")
	c.Run("tag", "v1")
	c.Run("push", "-q", "origin", "v1")
	other := c.Clone()
	other.Run("commit", "-q", "--allow-empty", "-m", "theirs")
	other.Run("push", "-q", "origin", "main")
	c.Run("commit", "-q", "--allow-empty", "-m", "mine")
	c.Run("tag", "-f", "v1")
	return pushSetup{client: c, remote: remote}
}

// pushRun runs refretry (or git, with name "git") in the client repository.
func pushRun(t *testing.T, r *testutil.Repo, extraEnv []string, name string, args ...string) result {
	t.Helper()
	path := binary
	if name == "git" {
		path = r.Git.Path
	}
	cmd := exec.Command(path, args...)
	cmd.Dir = r.Dir
	cmd.Env = append(append(slices.Clip(r.Env), "REFRETRY_GIT="+r.Git.Path), extraEnv...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return result{out.String(), errOut.String(), code}
}

// TestPushSameAsGit: failures refretry push does not retry give git push's bytes and
// exit code: with --porcelain exactly those of `git push --porcelain --atomic`, without
// it those of `git push` for a single ref.
func TestPushSameAsGit(t *testing.T) {
	t.Parallel()
	for _, bc := range backends(t) {
		t.Run(bc.git.Name()+"/"+bc.backend, func(t *testing.T) {
			t.Parallel()
			s := newPushSetup(t, bc.git, bc.backend)
			cases := []struct {
				name string
				args []string
				code int
			}{
				{"fetch first", []string{"origin", "main"}, 1},
				{"fetch first with a collateral ref", []string{"origin", "main", "main:refs/ci/1"}, 1},
				{"tag exists", []string{"origin", "v1"}, 1},
				{"stale lease", []string{"--force-with-lease=main:" + s.client.Commit, "origin", "main"}, 1},
				{"no such remote", []string{"nowhere", "main"}, 128},
				{"no such source", []string{"origin", "nosuch"}, 1},
				{"bad option", []string{"--frobnicate", "origin"}, 129},
			}
			for _, tc := range cases {
				porcelain := append([]string{"--porcelain"}, tc.args...)
				want := pushRun(t, s.client, nil, "git", append([]string{"push", "--porcelain", "--atomic"}, tc.args...)...)
				got := pushRun(t, s.client, nil, "refretry", append([]string{"push"}, porcelain...)...)
				if want.code != tc.code {
					t.Errorf("%s: git exited %d, the test expects %d\n%s", tc.name, want.code, tc.code, want.stderr)
				}
				if got != want {
					t.Errorf("%s, --porcelain:\nrefretry: %d\n%s\n%s\ngit: %d\n%s\n%s", tc.name, got.code, got.stdout, got.stderr, want.code, want.stdout, want.stderr)
				}
			}
			// Without --porcelain, refretry renders git's table from the porcelain.
			want := pushRun(t, s.client, nil, "git", "push", "origin", "main")
			got := pushRun(t, s.client, nil, "refretry", "push", "--no-atomic", "origin", "main")
			if got != want {
				t.Errorf("human output:\nrefretry: %d\n%q\n%q\ngit: %d\n%q\n%q", got.code, got.stdout, got.stderr, want.code, want.stdout, want.stderr)
			}
		})
	}
}

// TestPushLockHeldCLI: a remote lock that never goes away ends with git's output and
// exit code, one refretry line per retry and a summary.
func TestPushLockHeldCLI(t *testing.T) {
	t.Parallel()
	for _, bc := range backends(t) {
		t.Run(bc.git.Name()+"/"+bc.backend, func(t *testing.T) {
			t.Parallel()
			s := newPushSetup(t, bc.git, bc.backend)
			lock := filepath.Join(s.remote, "refs", "ci", "x.lock")
			if bc.backend == "reftable" {
				lock = filepath.Join(s.remote, "reftable", "tables.list.lock")
			}
			if err := os.MkdirAll(filepath.Dir(lock), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(lock, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			got := pushRun(t, s.client, nil, "refretry", "--max-attempts", "3", "--initial-delay", "1ms",
				"push", "origin", "HEAD:refs/ci/x")
			if got.code != 1 {
				t.Errorf("exit %d, want 1\n%s", got.code, got.stderr)
			}
			for _, want := range []string{
				"refretry: attempt 1 failed (lock-contention on the remote's",
				"refretry: attempt 2 failed (lock-contention",
				"refretry: gave up after 3 attempts in ",
				"(max-attempts); last failure: lock-contention",
				"[remote rejected]",
				"remote: error: ",
			} {
				if !strings.Contains(got.stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, got.stderr)
				}
			}
			if strings.Contains(got.stderr, "refretry: attempt 3") {
				t.Errorf("the last attempt is reported as retried:\n%s", got.stderr)
			}
			os.Remove(lock)
			got = pushRun(t, s.client, nil, "refretry", "push", "origin", "HEAD:refs/ci/x")
			if got.code != 0 || strings.Contains(got.stderr, "refretry:") {
				t.Errorf("after release: exit %d\n%s", got.code, got.stderr)
			}
		})
	}
}

// TestPushGitMissing: a git that cannot be started is exit 127 with refretry's line.
func TestPushGitMissing(t *testing.T) {
	t.Parallel()
	r := testutil.NewRepo(t, testutil.NewGit(t), "files")
	got := pushRun(t, r, nil, "refretry", "--git", "/nonexistent/git", "push", "origin", "main")
	want := "refretry: cannot run git (/nonexistent/git): fork/exec /nonexistent/git: no such file or directory\n"
	if got.code != 127 || got.stderr != want {
		t.Errorf("exit %d\n%s", got.code, got.stderr)
	}
}

// TestPushLogFile: --log-file gets one JSON record per attempt and a summary, as for
// update-ref, with push's classes and refs.
func TestPushLogFile(t *testing.T) {
	t.Parallel()
	cur := testutil.NewGit(t)
	s := newPushSetup(t, cur, "reftable")
	lock := filepath.Join(s.remote, "reftable", "tables.list.lock")
	if err := os.WriteFile(lock, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	logFile := filepath.Join(t.TempDir(), "log.jsonl")
	got := pushRun(t, s.client, nil, "refretry", "--log-file", logFile, "--max-attempts", "2", "--initial-delay", "1ms",
		"push", "origin", "HEAD:refs/ci/x")
	if got.code != 1 {
		t.Fatalf("exit %d\n%s", got.code, got.stderr)
	}
	os.Remove(lock)
	got = pushRun(t, s.client, nil, "refretry", "--log-file", logFile, "push", "origin", "HEAD:refs/ci/y")
	if got.code != 0 {
		t.Fatalf("exit %d\n%s", got.code, got.stderr)
	}
	b, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	var recs []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("%v: %q", err, line)
		}
		recs = append(recs, m)
	}
	var shape []string
	for _, m := range recs {
		shape = append(shape, fmt.Sprint(m["msg"], "/", m["class"], "/", m["result"]))
	}
	want := []string{
		"attempt/lock-contention/<nil>", "attempt/lock-contention/<nil>", "summary/lock-contention/gave-up",
		"attempt/<nil>/<nil>", "summary/<nil>/success",
	}
	if !slices.Equal(shape, want) {
		t.Fatalf("records %q, want %q\n%s", shape, want, b)
	}
	if refs := fmt.Sprint(recs[4]["refs"]); refs != "[refs/ci/y]" {
		t.Errorf("success summary refs %s", refs)
	}
	if recs[0]["operation_id"] != recs[2]["operation_id"] || recs[2]["operation_id"] == recs[4]["operation_id"] {
		t.Errorf("operation ids do not group the records")
	}
}

// TestPushMatrixExample runs examples/push-matrix.sh as matrix jobs finishing at once
// (4, or 6 at the stress size: testutil.Scale): every job's result ref lands, and every
// job's commit is on the shared branch.
func TestPushMatrixExample(t *testing.T) {
	t.Parallel()
	cur := testutil.NewGit(t)
	seed := testutil.NewRepo(t, cur, "files")
	remote := filepath.Join(t.TempDir(), "results.git")
	seed.Run("init", "-q", "--bare", "--ref-format=reftable", "-b", "main", remote)
	seed.Run("push", "-q", "file://"+remote, "main", "main:ci-log")
	script, err := filepath.Abs(filepath.Join("examples", "push-matrix.sh"))
	if err != nil {
		t.Fatal(err)
	}
	jobs := testutil.Scale(t, 4, 6)
	results := make([]result, jobs)
	done := make(chan int)
	for j := range jobs {
		job := seed.Clone()
		report := filepath.Join(job.Dir, "report.json")
		if err := os.WriteFile(report, []byte(fmt.Sprintf("{\"job\": %d}\n", j)), 0o644); err != nil {
			t.Fatal(err)
		}
		go func() {
			defer func() { done <- j }()
			cmd := exec.Command("bash", script, "report.json")
			cmd.Dir = job.Dir
			cmd.Env = append(slices.Clip(job.Env),
				"PATH="+filepath.Dir(cur.Path)+string(os.PathListSeparator)+os.Getenv("PATH"),
				"REFRETRY="+binary, "RESULTS_REMOTE=file://"+remote, "RUN_ID=7",
				fmt.Sprintf("JOB_ID=j%d", j), "APPEND_BRANCH=ci-log")
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			err := cmd.Run()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				code = -1
			}
			results[j] = result{stderr: out.String(), code: code}
		}()
	}
	for range jobs {
		<-done
	}
	for j, r := range results {
		if r.code != 0 {
			t.Errorf("job %d: exit %d\n%s", j, r.code, r.stderr)
		}
	}
	log := seed.Run("--git-dir="+remote, "log", "--format=%s", "ci-log")
	refs := seed.Run("--git-dir="+remote, "for-each-ref", "--format=%(refname)", "refs/ci/7/")
	for j := range jobs {
		if !strings.Contains(log, fmt.Sprintf("CI result: run 7, job j%d\n", j)) {
			t.Errorf("job %d's commit is not on ci-log:\n%s", j, log)
		}
		if !strings.Contains(refs+"\n", fmt.Sprintf("refs/ci/7/j%d\n", j)) {
			t.Errorf("refs/ci/7/j%d is missing:\n%s", j, refs)
		}
	}
}

// TestPushNamesPush: refretry push's reports name push in every log format, never
// update-ref; plain mode prints refretry's retry lines, which name no command.
func TestPushNamesPush(t *testing.T) {
	t.Parallel()
	cur := testutil.NewGit(t)
	s := newPushSetup(t, cur, "reftable")
	lock := filepath.Join(s.remote, "reftable", "tables.list.lock")
	if err := os.WriteFile(lock, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	formats := []struct {
		name string
		args []string
		env  []string
		want []string
	}{
		{"plain", nil, nil, []string{"refretry: attempt 1 failed (lock-contention", "refretry: gave up after 2 attempts"}},
		{"text", []string{"--log-format=text"}, nil, []string{"\nrefretry: push gave up after 2 attempts"}},
		{"json", []string{"--log-format=json"}, nil, []string{`"msg":"attempt"`, `"command":"push","result":"gave-up"`}},
		{"github", nil, []string{"GITHUB_ACTIONS=true"}, []string{"::group::refretry: push, operation ", "::error title=refretry%3A push gave-up::refretry: push gave up after 2 attempts"}},
		{"gitlab", nil, []string{"GITLAB_CI=true"}, []string{"[0Krefretry: push, operation ", "\nrefretry: push gave up after 2 attempts"}},
	}
	for _, f := range formats {
		args := append(append(slices.Clone(f.args), "--max-attempts=2", "--initial-delay=1ms"), "push", "origin", "HEAD:refs/ci/x")
		got := pushRun(t, s.client, f.env, "refretry", args...)
		if got.code != 1 {
			t.Errorf("%s: exit %d\n%s", f.name, got.code, got.stderr)
		}
		for _, want := range f.want {
			if !strings.Contains(got.stderr, want) {
				t.Errorf("%s: stderr lacks %q:\n%s", f.name, want, got.stderr)
			}
		}
		if strings.Contains(got.stderr, "update-ref") {
			t.Errorf("%s: a push reported as update-ref:\n%s", f.name, got.stderr)
		}
		if f.name == "json" && strings.Count(got.stderr, `"command":"push"`) != 3 {
			t.Errorf("json: want 3 records naming push:\n%s", got.stderr)
		}
	}
}

// TestPushAtomicUnsupported: a receiver without atomic pushes refuses --atomic, and git
// then reports the hang-up that follows. The refusal decides: one attempt, git's bytes,
// exit 128, and refretry's hint that --no-atomic exists; with it the push lands.
func TestPushAtomicUnsupported(t *testing.T) {
	t.Parallel()
	for _, bc := range backends(t) {
		t.Run(bc.git.Name()+"/"+bc.backend, func(t *testing.T) {
			t.Parallel()
			s := newPushSetup(t, bc.git, bc.backend)
			s.client.Run("--git-dir="+s.remote, "config", "receive.advertiseAtomic", "false")
			want := pushRun(t, s.client, nil, "git", "push", "--atomic", "origin", "HEAD:refs/ci/x")
			got := pushRun(t, s.client, nil, "refretry", "push", "origin", "HEAD:refs/ci/x")
			hint := "refretry: the remote does not support atomic pushes; push with refretry push --no-atomic " +
				"(each ref is then accepted or refused on its own)\n"
			if want.code != 128 || !strings.Contains(want.stderr, "fatal: the receiving end does not support --atomic push") {
				t.Fatalf("git push --atomic: exit %d\n%s", want.code, want.stderr)
			}
			if got.code != want.code || got.stdout != want.stdout || got.stderr != want.stderr+hint {
				t.Errorf("refretry: exit %d\n%q\nwant exit %d\n%q", got.code, got.stderr, want.code, want.stderr+hint)
			}
			got = pushRun(t, s.client, nil, "refretry", "push", "--no-atomic", "origin", "HEAD:refs/ci/x")
			if got.code != 0 {
				t.Errorf("--no-atomic: exit %d\n%s", got.code, got.stderr)
			}
		})
	}
}

// TestPushForgeRuleCLI: a push GitHub's repository rules refuse (GH013, transcribed,
// answered by internal/harness/gitserver's refusal) ends after one attempt with git's own
// output, exit 1, and one refretry line that states the rule; in JSON logs the rule is
// the summary's advice.
func TestPushForgeRuleCLI(t *testing.T) {
	t.Parallel()
	g := testutil.NewGit(t)
	r := testutil.NewRepo(t, g, "files")
	root := t.TempDir()
	r.Run("init", "-q", "--bare", "-b", "main", filepath.Join(root, "r.git"))
	srv, err := gitserver.Start(g.Path, root, gitserver.Options{ReceivePack: true,
		Refuse: []gitserver.Refusal{gitserver.GH013("refs/heads/main")}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	url := srv.URL("r.git")
	want := pushRun(t, r, nil, "git", "push", "--atomic", url, "main")
	got := pushRun(t, r, nil, "refretry", "push", url, "main")
	rule := "refretry: the remote's rules refused the push, so refretry did not retry: " +
		"GH013: Repository rule violations found for refs/heads/main. Review all repository rules at " +
		strings.TrimSuffix(url, ".git") + "/rules?ref=refs%2Fheads%2Fmain - Changes must be made through a pull request.\n"
	if got.code != 1 || want.code != 1 || got.stdout != want.stdout || got.stderr != want.stderr+rule {
		t.Errorf("refretry: %d\n%s\ngit: %d\n%s\nwant git's, then:\n%s", got.code, got.stderr, want.code, want.stderr, rule)
	}
	log := filepath.Join(t.TempDir(), "log.jsonl")
	pushRun(t, r, nil, "refretry", "--log-file", log, "push", url, "main")
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"advice":"the remote's rules refused the push`) || strings.Count(string(b), `"attempt":`) != 1 {
		t.Errorf("JSON log:\n%s", b)
	}
}

// forgeRemote is a bare repository whose main is the client's first commit, served by
// the test server; git runs git in it.
type forgeRemote struct {
	url string
	srv *gitserver.Server
	git func(args ...string) error
}

// serveForge makes the remote of r and serves it with the options opts returns, given
// the bare repository's path and git.
func serveForge(t *testing.T, r *testutil.Repo, opts func(bare string, git func(args ...string) error) gitserver.Options) forgeRemote {
	t.Helper()
	root := t.TempDir()
	bare := filepath.Join(root, "r.git")
	r.Run("init", "-q", "--bare", "-b", "main", bare)
	r.Run("push", "-q", bare, r.Commit+":refs/heads/main")
	git := func(args ...string) error {
		cmd := exec.Command(r.Git.Path, append([]string{"--git-dir=" + bare}, args...)...)
		cmd.Env = r.Env
		return cmd.Run()
	}
	o := opts(bare, git)
	o.ReceivePack = true
	srv, err := gitserver.Start(r.Git.Path, root, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return forgeRemote{srv.URL("r.git"), srv, git}
}

// jsonLog runs refretry with args and --log-file, and returns the log.
func jsonLog(t *testing.T, r *testutil.Repo, args ...string) (result, string) {
	t.Helper()
	log := filepath.Join(t.TempDir(), "log.jsonl")
	got := pushRun(t, r, nil, "refretry", append([]string{"--log-file", log}, args...)...)
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	return got, string(b)
}

// TestPushForgeMessagesCLI: GitHub's newer answers (transcribed; made by
// internal/harness/gitserver's GitHub front end), through the binary, against git
// push's own bytes:
//   - a GitHub App's token refused a workflow change: one attempt, git's output, one
//     refretry line saying why it was not retried, the JSON summary's advice;
//   - GitHub's workflow check timing out on every attempt to create a ref: git's
//     output of the last attempt, the give-up line and one refretry line naming the
//     way round it, also the JSON summary's advice;
//   - a lost race after GitHub's notice that the actor bypassed the branch's rules:
//     git's bytes exactly, class behind, and with --rebase the push lands.
func TestPushForgeMessagesCLI(t *testing.T) {
	t.Parallel()
	g := testutil.NewGit(t)
	t.Run("workflow permission", func(t *testing.T) {
		t.Parallel()
		r := testutil.NewRepo(t, g, "files")
		rem := serveForge(t, r, func(string, func(...string) error) gitserver.Options {
			return gitserver.Options{Refuse: []gitserver.Refusal{gitserver.GitHubAppWorkflow("refs/heads/main", ".github/workflows/ci.yml")}}
		})
		r.NewCommit("mine")
		want := pushRun(t, r, nil, "git", "push", "--atomic", rem.url, "main")
		got := pushRun(t, r, nil, "refretry", "push", "--rebase", rem.url, "main")
		line := "refretry: the remote does not let these credentials create or change a workflow file, so refretry did not retry: " +
			"push with a token that has the workflows permission (the workflow scope for a personal access token), " +
			"or without the change under .github/workflows\n"
		if got.code != 1 || want.code != 1 || got.stdout != want.stdout || got.stderr != want.stderr+line ||
			!strings.Contains(want.stderr, "without `workflows` permission)") {
			t.Errorf("refretry: %d\n%s\ngit: %d\n%s\nwant git's, then:\n%s", got.code, got.stderr, want.code, want.stderr, line)
		}
		_, log := jsonLog(t, r, "push", rem.url, "main")
		if !strings.Contains(log, `"advice":"the remote does not let these credentials`) || strings.Count(log, `"attempt":`) != 1 ||
			!strings.Contains(log, `"class":"declined"`) {
			t.Errorf("JSON log:\n%s", log)
		}
	})
	t.Run("workflow check timeout on a creation", func(t *testing.T) {
		t.Parallel()
		r := testutil.NewRepo(t, g, "files")
		faults := map[int]gitserver.PushFault{}
		for n := 1; n <= 7; n++ {
			faults[n] = gitserver.PushFault{Kind: gitserver.FaultWorkflowTimeout}
		}
		rem := serveForge(t, r, func(string, func(...string) error) gitserver.Options {
			return gitserver.Options{Forge: gitserver.ForgeGitHub, PushFaults: faults}
		})
		r.NewCommit("mine")
		budget := []string{"--max-attempts=3", "--initial-delay=10ms", "--max-delay=20ms"}
		want := pushRun(t, r, nil, "git", "push", "--atomic", rem.url, "HEAD:refs/heads/new")
		got := pushRun(t, r, nil, "refretry", append(budget, "push", rem.url, "HEAD:refs/heads/new")...)
		advice := "GitHub's check for workflow changes timed out creating refs/heads/new, as it may on every new ref " +
			"in a repository with many refs: push the commits to a ref that already exists first, " +
			"or create the ref on its own (for example through GitHub's API), then push again"
		lines := strings.Split(strings.TrimSuffix(got.stderr, "\n"), "\n")
		if got.code != 1 || want.code != 1 || len(lines) < 3 || lines[len(lines)-1] != "refretry: "+advice ||
			!strings.HasPrefix(lines[len(lines)-2], "refretry: gave up after 3 attempts in ") ||
			!strings.HasSuffix(strings.Join(lines[:len(lines)-2], "\n")+"\n", want.stderr) ||
			strings.Count(got.stderr, "refretry: attempt ") != 2 || !strings.Contains(want.stderr, "(Unable to determine if workflow") {
			t.Errorf("refretry: %d\n%s\ngit: %d\n%s\nwant the retries' lines, git's, the give-up line, then:\n%s",
				got.code, got.stderr, want.code, want.stderr, advice)
		}
		if n := rem.srv.ReceivePacks(); n != 4 {
			t.Errorf("%d receive-pack POSTs, want 1 by git and 3 by refretry", n)
		}
		_, log := jsonLog(t, r, append(budget, "push", rem.url, "HEAD:refs/heads/new")...)
		if !strings.Contains(log, `"advice":"GitHub's check for workflow changes timed out creating refs/heads/new`) ||
			strings.Count(log, `"class":"unknown-outcome"`) < 3 {
			t.Errorf("JSON log:\n%s", log)
		}
	})
	t.Run("lost race after a bypass notice", func(t *testing.T) {
		t.Parallel()
		r := testutil.NewRepo(t, g, "files")
		a := r.Commit
		theirs := r.NewCommit("theirs")
		r.Run("reset", "-q", "--hard", a)
		mine := r.NewCommit("mine")
		rem := serveForge(t, r, func(bare string, git func(...string) error) gitserver.Options {
			r.Run("push", "-q", bare, theirs+":refs/ci/theirs")
			return gitserver.Options{Forge: gitserver.ForgeGitHub, Bypass: []gitserver.Bypass{gitserver.GitHubBypass("refs/heads/main")},
				// Another job's push lands between each push's advertisement and its
				// update (it finds nothing to do once main has moved on from a).
				BeforeReceivePack: func(int) { git("update-ref", "refs/heads/main", theirs, a) }}
		})
		reset := func() {
			if err := rem.git("update-ref", "refs/heads/main", a, theirs); err != nil {
				t.Fatal(err)
			}
		}
		want := pushRun(t, r, nil, "git", "push", "--atomic", rem.url, "main")
		reset()
		got := pushRun(t, r, nil, "refretry", "push", rem.url, "main")
		if got.code != 1 || want.code != 1 || got.stdout != want.stdout || got.stderr != want.stderr ||
			!strings.HasPrefix(want.stderr, "remote: Bypassed rule violations for refs/heads/main:") ||
			!strings.Contains(want.stderr, "(cannot lock ref 'refs/heads/main': is at "+theirs+" but expected "+a+")") {
			t.Errorf("refretry: %d\n%s\ngit: %d\n%s", got.code, got.stderr, want.code, want.stderr)
		}
		reset()
		got, log := jsonLog(t, r, "push", "--rebase", rem.url, "main")
		if got.code != 0 || !strings.Contains(log, `"class":"behind"`) {
			t.Errorf("--rebase: exit %d\n%s\nJSON log:\n%s", got.code, got.stderr, log)
		}
		if err := rem.git("merge-base", "--is-ancestor", theirs, "refs/heads/main"); err != nil || rem.git("rev-parse", "--verify", "-q", "refs/heads/main^{/mine}") != nil {
			t.Errorf("server main does not hold theirs and mine (%s): %v", mine, err)
		}
	})
}

// TestRefusedRemote: a push or fetch to an address nothing listens on (a wrong port)
// ends after RefusedGrace of refused connections, not the whole budget: git's own
// message and exit code, then one refretry line that names the URL and port as the
// likely cause, also as the JSON summary's advice.
func TestRefusedRemote(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + l.Addr().String() + "/r.git"
	l.Close()
	r := testutil.NewRepo(t, testutil.NewGit(t), "files")
	for _, args := range [][]string{{"push", url, "HEAD:refs/heads/x"}, {"fetch", url, "main"}} {
		t.Run(args[0], func(t *testing.T) {
			t.Parallel()
			want := pushRun(t, r, nil, "git", args...)
			log := filepath.Join(t.TempDir(), "log.jsonl")
			got := pushRun(t, r, nil, "refretry", append([]string{"--timeout=5m", "--log-file", log}, args...)...)
			// The retries' lines, git's message of the last attempt, refretry's line.
			lines := strings.Split(strings.TrimSuffix(got.stderr, "\n"), "\n")
			retries, fatal, last := lines[:max(len(lines)-2, 0)], lines[max(len(lines)-2, 0)], lines[len(lines)-1]
			ok := got.code == 128 && want.code == 128 && len(retries) > 0 &&
				strings.HasPrefix(want.stderr, "fatal: unable to access '"+url+"/'") && strings.HasPrefix(fatal, "fatal: unable to access '"+url+"/'") &&
				strings.HasPrefix(last, "refretry: nothing accepted a connection to the remote in ") &&
				strings.HasSuffix(last, "check its URL and port (a remote that has never answered is retried for 10s, not the whole budget)")
			for _, l := range retries {
				ok = ok && strings.HasPrefix(l, "refretry: attempt ") && strings.Contains(l, " failed (transport: fatal: unable to access '"+url+"/'")
			}
			if !ok {
				t.Errorf("refretry: exit %d\n%s\ngit: exit %d\n%s", got.code, got.stderr, want.code, want.stderr)
			}
			b, err := os.ReadFile(log)
			if err != nil {
				t.Fatal(err)
			}
			if n := strings.Count(string(b), `"attempt":`); n < 2 || !strings.Contains(string(b), `"advice":"nothing accepted a connection`) {
				t.Errorf("JSON log (%d attempts; want several, and the advice):\n%s", n, b)
			}
		})
	}
}
