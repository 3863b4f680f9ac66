package gitserver_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/refretry/refretry/internal/harness/gitserver"
	"github.com/refretry/refretry/internal/harness/testutil"
)

// remote is a bare repository, r.git, under a root that a Server serves.
type remote struct {
	t       testing.TB
	git     testutil.Git
	backend string
	root    string
	dir     string
	env     []string
}

func newRemote(t testing.TB, g testutil.Git, backend string) *remote {
	t.Helper()
	return initRemote(t, g, backend, t.TempDir())
}

// remoteAt is the remote whose root is root (made by initRemote, or a copy of one).
func remoteAt(t testing.TB, g testutil.Git, backend, root string) *remote {
	return &remote{t: t, git: g, backend: backend, root: root, dir: filepath.Join(root, "r.git"), env: testutil.NoMaintenanceEnv(t, root)}
}

// initRemote makes the remote's bare repository under root, an existing directory.
func initRemote(t testing.TB, g testutil.Git, backend, root string) *remote {
	t.Helper()
	r := remoteAt(t, g, backend, root)
	args := []string{"init", "-q", "--bare", "-b", "main"}
	if backend == "reftable" {
		args = append(args, "--ref-format=reftable")
	}
	mustRun(t, g.Path, root, r.env, append(args, r.dir)...)
	return r
}

// run runs the remote's git in the bare repository.
func (r *remote) run(args ...string) string {
	r.t.Helper()
	return mustRun(r.t, r.git.Path, r.dir, r.env, args...)
}

// ref is the remote's value of name, "" when it has none.
func (r *remote) ref(name string) string {
	r.t.Helper()
	cmd := exec.Command(r.git.Path, "rev-parse", "-q", "--verify", name)
	cmd.Dir, cmd.Env = r.dir, r.env
	out, _ := cmd.Output()
	return strings.TrimSpace(string(out))
}

// serve starts a Server for the remote's root with opts (ReceivePack and the hermetic
// environment added), closed at the end of the test.
func (r *remote) serve(opts gitserver.Options) *gitserver.Server {
	r.t.Helper()
	opts.ReceivePack = true
	opts.Env = append(opts.Env, r.env...)
	s, err := gitserver.Start(r.git.Path, r.root, opts)
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(s.Close)
	return s
}

// work is a client's repository.
type work struct {
	t   testing.TB
	git testutil.Git
	dir string
	env []string
}

// workAt is the client's repository whose root is root (made by initWork, or a copy of one).
func workAt(t testing.TB, g testutil.Git, root string) *work {
	return &work{t: t, git: g, dir: filepath.Join(root, "w"), env: testutil.NoMaintenanceEnv(t, root)}
}

// initWork makes the client's repository under root, an existing directory, with
// origin at url.
func initWork(t testing.TB, g testutil.Git, root, url string) *work {
	t.Helper()
	w := workAt(t, g, root)
	mustRun(t, g.Path, root, w.env, "init", "-q", "-b", "main", w.dir)
	w.run("remote", "add", "origin", url)
	return w
}

func (w *work) run(args ...string) string {
	w.t.Helper()
	return mustRun(w.t, w.git.Path, w.dir, w.env, args...)
}

// commit makes a commit that writes file and returns its oid.
func (w *work) commit(file string) string {
	w.t.Helper()
	if err := os.WriteFile(filepath.Join(w.dir, file), []byte(file+"\n"), 0o644); err != nil {
		w.t.Fatal(err)
	}
	w.run("add", file)
	w.run("commit", "-q", "-m", "add "+file)
	return w.run("rev-parse", "HEAD")
}

// pushed is what one git push printed.
type pushed struct {
	code           int
	stdout, stderr string
}

// push runs git push with args and returns its output, whatever its exit code.
func (w *work) push(args ...string) pushed {
	w.t.Helper()
	cmd := exec.Command(w.git.Path, append([]string{"push"}, args...)...)
	cmd.Dir, cmd.Env = w.dir, w.env
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	code := 0
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		w.t.Fatal(err)
	}
	return pushed{code, out.String(), errOut.String()}
}

func mustRun(t testing.TB, git, dir string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command(git, args...)
	cmd.Dir, cmd.Env = dir, env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", git, strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}
