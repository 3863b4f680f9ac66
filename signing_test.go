package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/refretry/refretry/internal/harness/testutil"
	"github.com/refretry/refretry/internal/platform"
)

// signMode is one way refretry replaces a job's commit when the branch moved: what
// each job runs, given the job's name.
type signMode struct {
	name string
	// file is what a job's commit changes: its own file (name.txt), or its line of
	// the shared results.csv (which only a regeneration can merge).
	shared bool
	args   func(job string) []string // refretry's arguments ("" first: through the shim, as git)
	env    []string
	needs  [2]int // the git version it needs to replay (merge-tree --merge-base: 2.40)
}

var signModes = []signMode{
	{name: "rebase", args: func(string) []string { return []string{"push", "--rebase", "origin", "HEAD:main"} }},
	{name: "gather", args: func(string) []string { return []string{"push", "--gather", "origin", "HEAD:main"} },
		env: []string{"REFRETRY_GATHER_KEY=refretry-test-gather-key"}, needs: [2]int{2, 40}},
	{name: "regenerate", shared: true, args: func(job string) []string {
		return []string{"push", "--regenerate", "grep -qx " + job + " results.csv || echo " + job + " >> results.csv", "origin", "HEAD:main"}
	}},
	{name: "shim", args: func(string) []string { return []string{"", "push", "origin", "HEAD:main"} },
		env: []string{"REFRETRY_PUSH_REBASE=1"}},
}

// TestSignedReplays: a remote whose pre-receive hook refuses every commit that git
// verify-commit does not accept (a forge's "require signed commits"), and jobs that
// sign their commits (commit.gpgSign, gpg.format, user.signingKey, as a CI bot sets
// them), all behind the branch when they push. Through --rebase, --gather (with a
// key), --regenerate and the shim's push-rebase, on git 2.39 (where it can replay)
// and 2.55, with an SSH and an OpenPGP key: every job lands, once, and every commit
// on the branch verifies. One more job, whose key is gone once its commit is made,
// fails at once with one line that names its commit and git's words, and nothing of
// it is pushed: its result is not on the branch, nothing of it is staged, and its
// HEAD is its own commit. At the default size a covering subset of the cells runs
// (each mode, format and git once); the stress size runs them all.
func TestSignedReplays(t *testing.T) {
	t.Parallel()
	type cell struct {
		mode   signMode
		git    testutil.Git
		format string
	}
	var cells []cell
	for _, m := range signModes {
		for _, g := range testutil.Gits(t) {
			if m.needs != [2]int{} && !g.AtLeast(m.needs[0], m.needs[1]) {
				continue
			}
			for _, f := range testutil.SignFormats {
				cells = append(cells, cell{m, g, f})
			}
		}
	}
	// rebase: 2.39 ssh, 2.39 openpgp, 2.55 ssh, 2.55 openpgp; gather: 2.55 ssh,
	// openpgp; regenerate and shim: as rebase.
	for _, c := range testutil.Cells(t, cells, 0, 5, 8, 13) {
		t.Run(fmt.Sprintf("%s/%s/%s", c.mode.name, c.git.Name(), c.format), func(t *testing.T) {
			t.Parallel()
			testSignedReplays(t, c.mode, c.git, c.format)
		})
	}
}

func testSignedReplays(t *testing.T, mode signMode, g testutil.Git, format string) {
	f := newSignFixture(t, g, format, "")
	const jobs = 8
	names := make([]string, jobs+1)
	dirs := make([]string, jobs+1)
	for i := range names {
		names[i] = fmt.Sprintf("job-%d", i)
		dirs[i] = f.job(names[i], mode.shared)
	}
	// The last job's key goes away once its commit is made.
	keyless := jobs
	config, brokenEnv := f.signer.Broken(t)
	for _, kv := range config {
		f.git(dirs[keyless], "config", kv[0], kv[1])
	}
	// Every job is behind when it first pushes: a replay is certain, for the keyless
	// job too.
	f.git(f.seed, "commit", "-q", "--allow-empty", "-m", "moved")
	f.git(f.seed, "push", "-q", "origin", "HEAD:main")
	env := append(slices.Clip(f.env), mode.env...)
	var shimPath string
	if mode.args("")[0] == "" {
		shimPath, env = f.shim(env)
	}
	heads := make([]string, len(dirs))
	for i, dir := range dirs {
		heads[i] = f.git(dir, "rev-parse", "HEAD")
	}
	results := make([]result, len(dirs))
	var wg sync.WaitGroup
	for i, dir := range dirs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			jobEnv := env
			if i == keyless {
				jobEnv = append(slices.Clip(env), brokenEnv...)
			}
			args := mode.args(names[i])
			path := binary
			if args[0] == "" {
				path, args = shimPath, args[1:]
			}
			line := platform.ShellQuote(path)
			for _, a := range args {
				line += " " + platform.ShellQuote(a)
			}
			results[i] = runJob(dir, jobEnv, line)
		}()
	}
	wg.Wait()

	log := f.git(f.remote, "log", "--format=%H %s", "main")
	landed := f.git(f.remote, "log", "-p", "--format=", "main")
	for i, res := range results {
		n := strings.Count(landed, "+"+names[i]+"\n")
		switch {
		case i == keyless:
			lines := strings.Count(res.stderr, "refretry: cannot sign")
			if res.code != 1 || lines != 1 || n != 0 || !strings.Contains(res.stderr, "refretry: cannot sign the replay of "+heads[i][:12]) && !strings.Contains(res.stderr, "refretry: cannot sign a commit") {
				t.Errorf("the keyless job: exit %d, %d lines of refretry's about signing, landed %d times; want exit 1, one line, nothing landed:\n%s", res.code, lines, n, res.stderr)
			}
			if head := f.git(dirs[i], "rev-parse", "HEAD"); head != heads[i] {
				t.Errorf("the keyless job's HEAD moved from %s to %s", heads[i], head)
			}
		case res.code != 0 || n != 1:
			t.Errorf("%s: exit %d, landed %d times\n%s", names[i], res.code, n, res.stderr)
		}
	}
	if left := f.git(f.remote, "for-each-ref", "--format=%(refname) %(objectname)", "refs/refretry/"); left != "" {
		t.Errorf("left on the remote:\n%s", left)
	}
	// Every commit on the branch verifies, those refretry wrote included.
	for _, line := range strings.Split(log, "\n") {
		oid, subject, _ := strings.Cut(line, " ")
		if out, err := f.gitErr(f.remote, "verify-commit", oid); err != nil {
			t.Errorf("%s (%s) does not verify: %v\n%s", oid, subject, err, out)
		}
	}
}

// signFixture is a bare remote that refuses unsigned commits (to refs under its hook's
// prefix), a key that signs, and a seed clone whose commits are signed with it.
type signFixture struct {
	t            *testing.T
	g            testutil.Git
	signer       testutil.Signer
	root         string
	remote, seed string
	env          []string
}

func newSignFixture(t *testing.T, g testutil.Git, format, hookPrefix string) *signFixture {
	t.Helper()
	root := t.TempDir()
	s := testutil.NewSigner(t, format)
	f := &signFixture{t: t, g: g, signer: s, root: root, remote: filepath.Join(root, "r.git"), seed: filepath.Join(root, "seed"),
		env: append(append(testutil.NoMaintenanceEnv(t, root), s.Env()...), "REFRETRY_GIT="+g.Path)}
	f.git(root, "init", "-q", "--bare", "-b", "main", f.remote)
	for _, kv := range s.Config() { // git verify-commit in the remote, by the tests and the hook
		f.git(f.remote, "config", kv[0], kv[1])
	}
	s.InstallVerifyHook(t, f.remote, hookPrefix)
	f.git(root, "init", "-q", "-b", "main", f.seed)
	f.sign(f.seed)
	f.write(f.seed, "results.csv", "job\n")
	f.git(f.seed, "add", "results.csv")
	f.git(f.seed, "commit", "-q", "-m", "seed")
	f.git(f.seed, "remote", "add", "origin", "file://"+f.remote)
	f.git(f.seed, "push", "-q", "origin", "main")
	return f
}

// job makes a depth-1 clone named name that signs its commits, with one commit of its
// result (commit).
func (f *signFixture) job(name string, shared bool) string {
	f.t.Helper()
	dir := f.unsignedClone(name)
	f.sign(dir)
	f.commit(dir, name, shared)
	return dir
}

// unsignedClone is a depth-1 clone named name that does not sign its commits.
func (f *signFixture) unsignedClone(name string) string {
	f.t.Helper()
	dir := filepath.Join(f.root, name)
	f.git(f.root, "clone", "-q", "--depth=1", "file://"+f.remote, dir)
	return dir
}

// commit makes the commit of the job name in dir: its own file, or its line appended
// to the shared results.csv.
func (f *signFixture) commit(dir, name string, shared bool) {
	f.t.Helper()
	file := name + ".txt"
	content := name + "\n"
	if shared {
		file = "results.csv"
		b, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			f.t.Fatal(err)
		}
		content = string(b) + content
	}
	f.write(dir, file, content)
	f.git(dir, "add", file)
	f.git(dir, "commit", "-q", "-m", "result of "+name)
}

// sign sets the repository at dir to sign its commits with the fixture's key.
func (f *signFixture) sign(dir string) {
	for _, kv := range f.signer.Config() {
		f.git(dir, "config", kv[0], kv[1])
	}
}

func (f *signFixture) write(dir, name, content string) {
	f.t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

// shim installs the git shim and returns its path and env with it first on PATH.
func (f *signFixture) shim(env []string) (string, []string) {
	f.t.Helper()
	r := &testutil.Repo{Git: f.g, Env: env}
	return shimSetup(f.t, r)
}

// git runs git in dir and returns its trimmed output; a failure ends the test.
func (f *signFixture) git(dir string, args ...string) string {
	f.t.Helper()
	out, err := f.gitErr(dir, args...)
	if err != nil {
		f.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func (f *signFixture) gitErr(dir string, args ...string) (string, error) {
	cmd := commandIn(&testutil.Repo{Git: f.g, Dir: dir, Env: f.env}, f.g.Path, args...)
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// TestGatherSignatureRefused: a remote whose branch rule wants signed commits (its
// hook checks refs/heads/ only, as a forge's branch rules do), and jobs that do not
// sign. Each stages its commit; a gather's wave is refused for its signatures, which
// no retry, smaller wave or take-over can mend: every job fails with the remote's
// words and refretry's hint about signing, and lets the lease go. What was staged
// stays staged, for a human: nothing lands.
func TestGatherSignatureRefused(t *testing.T) {
	t.Parallel()
	f := newSignFixture(t, testutil.NewGit(t), "ssh", "refs/heads/")
	env := append(slices.Clip(f.env), "REFRETRY_GATHER_KEY=refretry-test-gather-key")
	const jobs = 3
	results := make([]result, jobs)
	dirs := make([]string, jobs)
	for i := range dirs {
		dirs[i] = f.unsignedClone(fmt.Sprintf("job-%d", i))
		f.commit(dirs[i], fmt.Sprintf("job-%d", i), false)
	}
	var wg sync.WaitGroup
	for i, dir := range dirs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = runJob(dir, env, platform.ShellQuote(binary)+" push --gather origin HEAD:main")
		}()
	}
	wg.Wait()
	for i, res := range results {
		if res.code != 1 || !strings.Contains(res.stderr, "is not signed by a trusted key") ||
			!strings.Contains(res.stderr, "the remote wants signed commits") || strings.Contains(res.stderr, "taking it over") {
			t.Errorf("job-%d: exit %d; want 1, the remote's words and the hint, no take-over:\n%s", i, res.code, res.stderr)
		}
	}
	refs := f.git(f.remote, "for-each-ref", "--format=%(refname)", "refs/refretry/")
	if strings.Contains(refs, "refs/refretry/lease/") || strings.Count(refs, "refs/refretry/gather/") != jobs {
		t.Errorf("the remote's gather refs:\n%s\nwant the %d staged commits and no lease", refs, jobs)
	}
	if log := f.git(f.remote, "log", "--format=%s", "main"); log != "seed" {
		t.Errorf("main: %q, want the seed alone", log)
	}
}
