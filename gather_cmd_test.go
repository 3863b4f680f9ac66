package main

import (
	"bytes"

	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/refretry/refretry/internal/harness/hermetic"
	"github.com/refretry/refretry/internal/harness/testutil"
)

// killingGit is a git for refretry that runs the real one but SIGKILLs refretry at one
// step of a gather: before or after the push that stages the commit ("stage"), takes
// the lease ("lease") or lands a wave ("wave").
const killingGit = `#!/bin/sh
step=other
case "$*" in
*"--force-with-lease=refs/heads/"*) step=wave ;;
*"--force-with-lease=refs/refretry/lease/"*) step=lease ;;
*push*":refs/refretry/gather/"*) step=stage ;;
esac
if [ "$step" = "$KILL_STEP" ] && [ "$KILL_WHEN" = before ]; then kill -9 $PPID; exit 137; fi
"$REAL_GIT" "$@"; rc=$?
if [ "$step" = "$KILL_STEP" ] && [ "$KILL_WHEN" = after ]; then kill -9 $PPID; fi
exit $rc
`

// TestGatherKilled: a job SIGKILLed at each step of a gather. Nothing is half-applied:
// a commit staged before the kill lands later (with the next job's gather, or
// `refretry gather land`), a lease left by the dead job is taken over, and no commit
// lands twice.
func TestGatherKilled(t *testing.T) {
	t.Parallel()
	g := testutil.NewGit(t)
	for _, step := range []string{"stage", "lease", "wave"} {
		for _, when := range []string{"before", "after"} {
			t.Run(step+"/"+when, func(t *testing.T) {
				t.Parallel()
				root := t.TempDir()
				env := hermetic.Env(os.Environ(), root)
				gitIn := func(dir string, args ...string) string {
					t.Helper()
					cmd := exec.Command(g.Path, args...)
					cmd.Dir, cmd.Env = dir, env
					out, err := cmd.CombinedOutput()
					if err != nil {
						t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
					}
					return strings.TrimSpace(string(out))
				}
				remote := filepath.Join(root, "r.git")
				gitIn(root, "init", "-q", "--bare", "-b", "main", remote)
				seed := filepath.Join(root, "seed")
				gitIn(root, "init", "-q", "-b", "main", seed)
				gitIn(seed, "commit", "-q", "--allow-empty", "-m", "seed")
				gitIn(seed, "commit", "-q", "--allow-empty", "-m", "seed 2")
				gitIn(seed, "push", "-q", "file://"+remote, "main")
				clone := func(name string) string {
					dir := filepath.Join(root, name)
					gitIn(root, "clone", "-q", "--depth=1", "file://"+remote, dir)
					gitIn(dir, "checkout", "-q", "--detach")
					if err := os.WriteFile(filepath.Join(dir, name), []byte(name), 0o644); err != nil {
						t.Fatal(err)
					}
					gitIn(dir, "add", name)
					gitIn(dir, "commit", "-q", "-m", "result of "+name)
					return dir
				}
				wrapper := filepath.Join(root, "killing-git")
				if err := os.WriteFile(wrapper, []byte(killingGit), 0o755); err != nil {
					t.Fatal(err)
				}
				refretry := func(dir, git string, extra []string, args ...string) (int, string) {
					cmd := exec.Command(binary, args...)
					cmd.Dir = dir
					cmd.Env = append(append(env, "REFRETRY_GIT="+git, "REAL_GIT="+g.Path), extra...)
					var out bytes.Buffer
					cmd.Stdout, cmd.Stderr = &out, &out
					err := cmd.Run()
					code := 0
					if ee, ok := err.(*exec.ExitError); ok {
						code = ee.ExitCode()
					}
					return code, out.String()
				}
				lease := "--gather-lease=1s"
				// The job that dies.
				dead := clone("dead")
				code, out := refretry(dead, wrapper, []string{"KILL_STEP=" + step, "KILL_WHEN=" + when},
					"push", "--gather", lease, "origin", "HEAD:main")
				if code != -1 && code != 137 {
					t.Fatalf("the job was not killed: exit %d\n%s", code, out)
				}
				// Two jobs after it, at once, and then whatever is left is landed.
				var wg sync.WaitGroup
				for _, name := range []string{"live1", "live2"} {
					dir := clone(name)
					wg.Add(1)
					go func() {
						defer wg.Done()
						if code, out := refretry(dir, g.Path, nil, "push", "--gather", lease, "origin", "HEAD:main"); code != 0 {
							t.Errorf("%s: exit %d\n%s", name, code, out)
						}
					}()
				}
				wg.Wait()
				if code, out := refretry(seed, g.Path, nil, "gather", "land", "file://"+remote, "main"); code != 0 {
					t.Errorf("gather land: exit %d\n%s", code, out)
				}
				log := gitIn(remote, "log", "--format=%s", "main")
				for _, name := range []string{"live1", "live2"} {
					if n := strings.Count(log+"\n", "result of "+name+"\n"); n != 1 {
						t.Errorf("%s is on main %d times:\n%s", name, n, log)
					}
				}
				deadStaged := !(step == "stage" && when == "before")
				if n := strings.Count(log+"\n", "result of dead\n"); n != map[bool]int{true: 1, false: 0}[deadStaged] {
					t.Errorf("the dead job's commit is on main %d times (staged before the kill: %v):\n%s", n, deadStaged, log)
				}
				if left := gitIn(remote, "for-each-ref", "refs/refretry/"); left != "" {
					t.Errorf("left on the remote:\n%s", left)
				}
			})
		}
	}
}
