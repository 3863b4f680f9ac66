package repo

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/refretry/refretry/internal/harness/testutil"
)

// ask is Locate's question put to g in the repository at dir.
func ask(g testutil.Git, dir string, env []string) func() (string, error) {
	return func() (string, error) {
		cmd := exec.Command(g.Path, StorageArgs...)
		cmd.Dir, cmd.Env = dir, env
		return ReadStorage(cmd)
	}
}

// refFormat is what the running git says the repository's ref format is.
func refFormat(t *testing.T, g testutil.Git, dir string, env []string) string {
	t.Helper()
	cmd := exec.Command(g.Path, "rev-parse", "--show-ref-format")
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git rev-parse --show-ref-format: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// TestLocateUsual: in the layouts git makes when the refs are in the repository,
// Locate answers in-process, with the common directory and git's format.
func TestLocateUsual(t *testing.T) {
	t.Parallel()
	cur := testutil.NewGit(t)
	for _, c := range []struct {
		git     testutil.Git
		backend string
	}{{testutil.SystemGit(t), "files"}, {cur, "files"}, {cur, "reftable"}} {
		t.Run(c.git.Name()+"/"+c.backend, func(t *testing.T) {
			t.Parallel()
			r := testutil.NewRepo(t, c.git, c.backend)
			d, ok := Discover([]string{r.Dir}, r.Env)
			if !ok {
				t.Fatal("repository not found")
			}
			s, ok := d.Locate(r.Env, nil)
			want := Store{Format: c.backend, Dir: d.CommonDir, WorktreeDir: d.GitDir}
			if !ok || s != want {
				t.Fatalf("Locate = %+v, %v; want %+v in-process", s, ok, want)
			}
			if c.git.AtLeast(2, 45) {
				if f := refFormat(t, c.git, r.Dir, r.Env); f != s.Format {
					t.Errorf("git says the format is %s, Locate %s", f, s.Format)
				}
			}
			if s.Reftable() {
				r.Hold(s.ReftableLock()) // git's lock, where Locate says it is
				cmd := exec.Command(c.git.Path, "-c", "reftable.lockTimeout=0", "update-ref", "refs/heads/x", r.Commit)
				cmd.Dir, cmd.Env = r.Dir, r.Env
				if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "cannot lock references") {
					t.Errorf("git with %s held: %v\n%s", s.ReftableLock(), err, out)
				}
			}
		})
	}
}

// TestLocateOutside: a repository initialised with GIT_REFERENCE_BACKEND keeps its
// refs in that store; Locate does not guess it in-process, finds it from git config
// (the main worktree's and a linked worktree's directories), and takes the variable
// itself, which overrides the config for every git that sees it, without git.
func TestLocateOutside(t *testing.T) {
	t.Parallel()
	g := testutil.NewGit(t)
	for _, backend := range []string{"files", "reftable"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			r := testutil.NewRepoOutside(t, g, backend)
			d, ok := Discover([]string{r.Dir}, r.Env)
			if !ok {
				t.Fatal("repository not found")
			}
			if s, ok := d.Locate(r.Env, nil); ok {
				t.Errorf("Locate in-process = %+v, want no answer for a store elsewhere", s)
			}
			s, ok := d.Locate(r.Env, ask(g, r.Dir, r.Env))
			if want := (Store{Format: backend, Dir: r.Store, WorktreeDir: r.Store}); !ok || s != want {
				t.Fatalf("Locate = %+v, %v; want %+v", s, ok, want)
			}
			if f := refFormat(t, g, r.Dir, r.Env); f != s.Format {
				t.Errorf("git says the format is %s, Locate %s", f, s.Format)
			}
			// The refs are where Locate says, and not in the repository.
			r.Run("update-ref", "refs/heads/x", r.Commit)
			inStore := filepath.Join(s.Dir, "refs", "heads", "x")
			if s.Reftable() {
				inStore = filepath.Join(s.ReftableDir(), "tables.list")
			}
			if _, err := os.Stat(inStore); err != nil {
				t.Errorf("the store lacks %s: %v", inStore, err)
			}
			for _, p := range []string{filepath.Join(d.CommonDir, "reftable"), filepath.Join(d.CommonDir, "refs", "heads", "x")} {
				if _, err := os.Stat(p); err == nil {
					t.Errorf("%s exists in the repository", p)
				}
			}
			// A file lock git takes is the one Locate names.
			lock := s.RefLock("refs/heads/x")
			if s.Reftable() {
				lock = s.ReftableLock()
			}
			release := r.Hold(lock)
			cmd := exec.Command(g.Path, "-c", "reftable.lockTimeout=0", "update-ref", "refs/heads/x", strings.Repeat("0", 40))
			cmd.Dir, cmd.Env = r.Dir, r.Env
			out, err := cmd.CombinedOutput()
			if err == nil || !s.Reftable() && !strings.Contains(string(out), lock) || s.Reftable() && !strings.Contains(string(out), "cannot lock references") {
				t.Errorf("git with %s held: %v\n%s", lock, err, out)
			}
			release()

			// A linked worktree keeps its own refs in <store>/worktrees/<id>.
			wt := filepath.Join(t.TempDir(), "wt")
			r.Run("worktree", "add", "-q", wt)
			wd, ok := Discover([]string{wt}, r.Env)
			if !ok {
				t.Fatal("worktree not found")
			}
			ws, ok := wd.Locate(r.Env, ask(g, wt, r.Env))
			want := Store{Format: backend, Dir: r.Store, WorktreeDir: filepath.Join(r.Store, "worktrees", filepath.Base(wd.GitDir))}
			if !ok || ws != want {
				t.Fatalf("worktree: Locate = %+v, %v; want %+v", ws, ok, want)
			}
			cmd = exec.Command(g.Path, "update-ref", "refs/worktree/mine", r.Commit)
			cmd.Dir, cmd.Env = wt, r.Env
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("git update-ref in the worktree: %v\n%s", err, out)
			}
			own := filepath.Join(ws.WorktreeDir, "refs", "worktree", "mine")
			if ws.Reftable() {
				own = filepath.Join(ws.WorktreeDir, "reftable", "tables.list")
			}
			if _, err := os.Stat(own); err != nil {
				t.Errorf("the worktree's refs are not in %s: %v", ws.WorktreeDir, err)
			}

			// GIT_REFERENCE_BACKEND is taken as it is, without git.
			other := filepath.Join(t.TempDir(), "other")
			env := append(append([]string{}, r.Env...), ReferenceBackendVar+"=reftable://"+other)
			es, ok := d.Locate(env, func() (string, error) { t.Error("git asked"); return "", nil })
			if want := (Store{Format: "reftable", Dir: other, WorktreeDir: other}); !ok || es != want {
				t.Errorf("with %s: Locate = %+v, %v; want %+v", ReferenceBackendVar, es, ok, want)
			}
		})
	}
}

// TestStoreOf reads the values git accepts for extensions.refStorage.
func TestStoreOf(t *testing.T) {
	t.Parallel()
	main := Dirs{GitDir: "/r/.git", CommonDir: "/r/.git"}
	linked := Dirs{GitDir: "/r/.git/worktrees/wt", CommonDir: "/r/.git"}
	cases := []struct {
		d     Dirs
		value string
		want  Store
		err   bool
	}{
		{main, "", Store{"files", "/r/.git", "/r/.git"}, false},
		{main, "reftable", Store{"reftable", "/r/.git", "/r/.git"}, false},
		{linked, "reftable", Store{"reftable", "/r/.git", "/r/.git/worktrees/wt"}, false},
		{main, "files:///s", Store{"files", "/s", "/s"}, false},
		{main, "reftable://../s", Store{"reftable", "/r/s", "/r/s"}, false},
		{linked, "reftable:///s", Store{"reftable", "/s", "/s/worktrees/wt"}, false},
		{main, "postgres://127.0.0.1", Store{}, true},
	}
	for _, c := range cases {
		got, err := c.d.StoreOf(c.value)
		if (err != nil) != c.err || got != c.want {
			t.Errorf("%+v.StoreOf(%q) = %+v, %v; want %+v (error %v)", c.d, c.value, got, err, c.want, c.err)
		}
	}
}
