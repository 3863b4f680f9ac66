package repo

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/refretry/refretry/internal/harness/testutil"
)

// TestDiscoverMatchesGit checks the in-process repository discovery against git's own
// answer (rev-parse) for the layouts refretry meets, and that it declines, rather than
// guesses, where it does not follow git's rules.
func TestDiscoverMatchesGit(t *testing.T) {
	t.Parallel()
	g := testutil.NewGit(t)
	files := testutil.NewRepo(t, g, "files")
	reftable := testutil.NewRepo(t, g, "reftable")

	sub := filepath.Join(reftable.Dir, "a", "b")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	wt := filepath.Join(t.TempDir(), "wt")
	reftable.Run("worktree", "add", "-q", wt)
	bare := filepath.Join(t.TempDir(), "bare.git")
	reftable.Run("init", "-q", "--bare", "--ref-format=reftable", bare)
	sepWork, sepGit := filepath.Join(t.TempDir(), "work"), filepath.Join(t.TempDir(), "sep.git")
	reftable.Run("init", "-q", "--ref-format=reftable", "--separate-git-dir", sepGit, sepWork)
	notRepo := t.TempDir()

	cases := []struct {
		name   string
		dirs   []string
		env    []string
		wantOK bool
	}{
		{"files work tree", []string{files.Dir}, nil, true},
		{"reftable work tree", []string{reftable.Dir}, nil, true},
		{"subdirectory via two -C", []string{reftable.Dir, "a/b"}, nil, true},
		{"inside .git", []string{filepath.Join(reftable.GitDir, "reftable")}, nil, true},
		{"linked worktree", []string{wt}, nil, true},
		{"bare repository", []string{bare}, nil, true},
		{"inside a bare repository", []string{filepath.Join(bare, "objects")}, nil, true},
		{"separate git dir (gitfile)", []string{sepWork}, nil, true},
		{"GIT_DIR relative to -C", []string{reftable.Dir}, []string{"GIT_DIR=.git"}, true},
		{"GIT_DIR elsewhere", []string{notRepo}, []string{"GIT_DIR=" + files.GitDir}, true},
		{"GIT_CEILING_DIRECTORIES declines", []string{sub}, []string{"GIT_CEILING_DIRECTORIES=" + reftable.Dir}, false},
		{"not a repository", []string{notRepo}, nil, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			env := append(append([]string{}, reftable.Env...), c.env...)
			got, ok := Discover(c.dirs, env)
			if ok != c.wantOK {
				t.Fatalf("discover ok = %v (%+v), want %v", ok, got, c.wantOK)
			}
			if !ok {
				return
			}
			args := []string{}
			for _, d := range c.dirs {
				args = append(args, "-C", d)
			}
			cmd := exec.Command(g.Path, append(args, "rev-parse", "--path-format=absolute", "--git-dir", "--git-common-dir")...)
			cmd.Env = env
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("git rev-parse: %v", err)
			}
			gitDir, common, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
			if real(t, got.GitDir) != real(t, gitDir) || real(t, got.CommonDir) != real(t, common) {
				t.Errorf("discover = git dir %s, common dir %s; git says %s, %s", got.GitDir, got.CommonDir, gitDir, common)
			}
		})
	}
}

func real(t *testing.T, p string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatalf("%s: %v", p, err)
	}
	return r
}
