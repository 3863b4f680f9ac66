//go:build unix

package main

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
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
