//go:build unix

package main

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/refretry/refretry/internal/harness/testutil"
)

// extScript is an external git command, as git-filter-repo is one: it names the git
// it finds, saves its environment, runs git update-ref and git fetch, and ends with
// output on both streams and exit code 7.
const extScript = `#!/bin/sh
echo "git is $(command -v git)"
env | grep -v -e '^PATH=' -e '^_=' | sort > "$ENVDIR/env-$1"
printf '%s\n' "$PATH" > "$ENVDIR/path-$1"
git update-ref "refs/heads/ext-$1" HEAD || exit 9
git fetch -q . "refs/heads/main:refs/heads/fetched-$1" || exit 10
echo "to stderr" >&2
echo "args: $*"
exit 7
`

// TestShimExternal runs an external git-<name> program on PATH through git itself and
// through the shim, with both gits and both backends. Through git, its git is the one
// in git's exec path and refretry never runs; through the shim, its git is the shim
// and its update-ref and fetch go through refretry (two records in REFRETRY_LOG_FILE).
// Otherwise the two runs are the same: the environment, the streams, the exit code,
// the refs; a command killed by a signal and a missing command end as git ends them.
func TestShimExternal(t *testing.T) {
	t.Parallel()
	for _, bc := range backends(t) {
		t.Run(bc.git.Name()+"/"+bc.backend, func(t *testing.T) {
			t.Parallel()
			r := testutil.NewRepo(t, bc.git, bc.backend)
			extDir := t.TempDir()
			for name, body := range map[string]string{"foo": extScript, "dies": "#!/bin/sh\necho before\nkill -TERM $$\n"} {
				if err := os.WriteFile(filepath.Join(extDir, "git-"+name), []byte(body), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			shimGit, env := shimSetup(t, r, extDir)
			logFile := filepath.Join(t.TempDir(), "log")
			env = append(env, "REFRETRY_LOG_FILE="+logFile, "ENVDIR="+extDir)
			elsewhere := t.TempDir()

			viaGit := runCmd(t, elsewhere, env, "", r.Git.Path, "--no-pager", "-C", r.Dir, "foo", "git")
			if _, err := os.Stat(logFile); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("refretry ran under plain git (%v): the test proves nothing", err)
			}
			viaShim := runCmd(t, elsewhere, env, "", shimGit, "--no-pager", "-C", r.Dir, "foo", "shim")
			execPath := strings.TrimSpace(runCmd(t, r.Dir, env, "", r.Git.Path, "--exec-path").stdout)
			for _, c := range []struct {
				res result
				tag string
				git string
			}{{viaGit, "git", filepath.Join(execPath, "git")}, {viaShim, "shim", shimGit}} {
				want := result{"git is " + c.git + "\nargs: " + c.tag + "\n", "to stderr\n", 7}
				if c.res != want {
					t.Errorf("through %s:\n%+v\nwant\n%+v", c.tag, c.res, want)
				}
				refs := r.Refs("refs/heads/")
				if refs["refs/heads/ext-"+c.tag] != r.Commit || refs["refs/heads/fetched-"+c.tag] != r.Commit {
					t.Errorf("through %s: refs %v", c.tag, refs)
				}
			}
			log, err := os.ReadFile(logFile)
			if err != nil {
				t.Fatalf("nothing logged through the shim: the external's git calls missed refretry: %v", err)
			}
			if n := strings.Count(string(log), `"msg":"summary"`); n != 2 {
				t.Errorf("%d operations logged, want 2 (update-ref and fetch):\n%s", n, log)
			}
			read := func(name string) string {
				b, err := os.ReadFile(filepath.Join(extDir, name))
				if err != nil {
					t.Fatal(err)
				}
				return string(b)
			}
			if g, s := read("env-git"), read("env-shim"); g != s {
				t.Errorf("environment through git:\n%s\nthrough the shim:\n%s", g, s)
			}
			if g, s := read("path-git"), read("path-shim"); s != filepath.Dir(shimGit)+":"+g {
				t.Errorf("PATH through the shim %q, want the shim's directory before git's %q", s, g)
			}

			// Standard output on /dev/null, a character device but not a terminal: the
			// shim still runs the command.
			null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer null.Close()
			cmd := exec.Command(shimGit, "foo", "devnull")
			cmd.Dir, cmd.Env, cmd.Stdout = r.Dir, env, null
			if err := cmd.Run(); cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 7 {
				t.Errorf("git foo > /dev/null through the shim: %v", err)
			}
			if log, _ := os.ReadFile(logFile); strings.Count(string(log), `"msg":"summary"`) != 4 {
				t.Errorf("git foo > /dev/null: its git calls missed refretry:\n%s", log)
			}

			// A command killed by a signal, and one that does not exist: git's words
			// and exit codes.
			for _, args := range [][]string{{"dies"}, {"no-such-command"}, {"-C", r.Dir, "no-such-command", "x"}} {
				want := runCmd(t, r.Dir, env, "", r.Git.Path, args...)
				got := runCmd(t, r.Dir, env, "", shimGit, args...)
				if got != want || want.code == 0 {
					t.Errorf("%q through the shim:\n%+v\nwant (git directly):\n%+v", args, got, want)
				}
			}
		})
	}
}

// TestShimFilterRepo runs git-filter-repo (an external command, when installed) as
// `git filter-repo` on two clones of one repository, with plain git and with the shim
// first on PATH: through the shim its ref updates reach refretry, and the rewritten refs
// are the same as plain git's, with both gits and both backends.
func TestShimFilterRepo(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git-filter-repo"); err != nil {
		t.Skip("git-filter-repo is not installed (Debian: apt-get install git-filter-repo): nothing to run")
	}
	for _, bc := range backends(t) {
		t.Run(bc.git.Name()+"/"+bc.backend, func(t *testing.T) {
			t.Parallel()
			r := testutil.NewRepo(t, bc.git, bc.backend)
			for _, f := range []string{"keep", "secret/a", "secret/b"} {
				p := filepath.Join(r.Dir, f)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(f+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				r.Run("add", f)
				r.Run("commit", "-q", "-m", "add "+f)
			}
			r.Run("branch", "side", "HEAD~1")
			r.Run("tag", "v1", "HEAD~2")
			shimGit, env := shimSetup(t, r)
			plainEnv := slices.DeleteFunc(slices.Clone(env), func(kv string) bool { return strings.HasPrefix(kv, "PATH=") })
			plainEnv = append(plainEnv, "PATH="+filepath.Dir(r.Git.Path)+":"+os.Getenv("PATH"))
			logFile := filepath.Join(t.TempDir(), "log")
			env = append(env, "REFRETRY_LOG_FILE="+logFile)
			refs := map[string]string{}
			for _, run := range []struct {
				name string
				env  []string
				git  string // what `git` on this run's PATH is
			}{{"plain", plainEnv, r.Git.Path}, {"shim", env, shimGit}} {
				dst := filepath.Join(t.TempDir(), run.name)
				clone := []string{"clone", "-q", "--no-local"}
				if bc.backend == "reftable" {
					clone = append(clone, "--ref-format=reftable")
				}
				if res := runCmd(t, r.Dir, run.env, "", r.Git.Path, append(clone, r.Dir, dst)...); res.code != 0 {
					t.Fatalf("clone: %+v", res)
				}
				runCmd(t, dst, run.env, "", r.Git.Path, "branch", "-q", "side", "origin/side")
				if res := runCmd(t, dst, run.env, "", run.git, "filter-repo", "--quiet", "--path", "secret", "--invert-paths"); res.code != 0 {
					t.Fatalf("git filter-repo (%s): %+v", run.name, res)
				}
				refs[run.name] = runCmd(t, dst, run.env, "", r.Git.Path, "for-each-ref", "--format=%(refname) %(objectname)").stdout
				_, err := os.Stat(logFile)
				if logged := err == nil; logged != (run.name == "shim") {
					t.Errorf("%s: refretry ran: %v", run.name, logged)
				}
			}
			if refs["plain"] != refs["shim"] || strings.Count(refs["plain"], "\n") < 3 {
				t.Errorf("refs after filter-repo, plain:\n%s\nthrough the shim:\n%s", refs["plain"], refs["shim"])
			}
			log, _ := os.ReadFile(logFile)
			if n := strings.Count(string(log), `"command":"update-ref"`); n == 0 {
				t.Errorf("no update-ref reached refretry:\n%s", log)
			}
		})
	}
}
