//go:build unix

package cli

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/refretry/refretry/internal/shim"
)

// TestShimInstallCommand runs `refretry shim install` and `uninstall` as a GitHub
// Actions step would.
func TestShimInstallCommand(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	dir := filepath.Join(root, "shim dir")
	ghPath := filepath.Join(root, "github_path")
	environ := []string{"PATH=/usr/bin:/bin", "HOME=" + root, "GITHUB_ACTIONS=true", "GITHUB_PATH=" + ghPath}
	var out, errOut bytes.Buffer
	if code := Run(context.Background(), []string{"shim", "install", "--dir", dir}, Streams{nil, &out, &errOut}, environ); code != 0 {
		t.Fatalf("shim install: exit %d\n%s", code, errOut.String())
	}
	if want := "export PATH='" + dir + `':"$PATH"` + "\n"; out.String() != want {
		t.Errorf("stdout %q, want %q", out.String(), want)
	}
	if b, _ := os.ReadFile(ghPath); string(b) != dir+"\n" {
		t.Errorf("GITHUB_PATH holds %q", b)
	}
	self, _ := selfPath()
	if target, err := os.Readlink(filepath.Join(dir, "git")); err != nil || target != self {
		t.Errorf("entry -> %q (%v), want %s", target, err, self)
	}
	if !strings.Contains(errOut.String(), "reach /usr/bin/git") {
		t.Errorf("stderr does not name the real git:\n%s", errOut.String())
	}
	out.Reset()
	errOut.Reset()
	if code := Run(context.Background(), []string{"shim", "uninstall", "--dir", dir}, Streams{nil, &out, &errOut}, environ); code != 0 {
		t.Fatalf("shim uninstall: exit %d\n%s", code, errOut.String())
	}
	if _, err := os.Lstat(filepath.Join(dir, "git")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the entry is still there: %v", err)
	}
	// Default directory, outside GitHub Actions: nothing is written to GITHUB_PATH.
	environ = []string{"PATH=/usr/bin:/bin", "HOME=" + root, "XDG_DATA_HOME=" + filepath.Join(root, "data"), "GITHUB_PATH=" + ghPath}
	out.Reset()
	if code := Run(context.Background(), []string{"shim", "install"}, Streams{nil, &out, &errOut}, environ); code != 0 {
		t.Fatalf("shim install: exit %d\n%s", code, errOut.String())
	}
	if want := filepath.Join(root, "data", "refretry", "shim"); !strings.Contains(out.String(), want) {
		t.Errorf("stdout %q does not name %s", out.String(), want)
	}
	if b, _ := os.ReadFile(ghPath); string(b) != dir+"\n" {
		t.Errorf("GITHUB_PATH changed outside GitHub Actions: %q", b)
	}
	// A real git is never replaced.
	errOut.Reset()
	if code := Run(context.Background(), []string{"shim", "install", "--dir", "/usr/bin"}, Streams{nil, &out, &errOut}, environ); code == 0 ||
		!strings.Contains(errOut.String(), "not a refretry shim") {
		t.Errorf("install over /usr/bin/git: exit %d\n%s", code, errOut.String())
	}
}

// TestShimDecides checks runAsGit's choice without processes: only update-ref, with
// options it can pass on, is refretry's; the rest goes to execGit with the arguments
// untouched.
func TestShimDecides(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	self := filepath.Join(root, "self", "git")
	realGit := filepath.Join(root, "real", "git")
	for _, p := range []string{self, realGit} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	environ := []string{"PATH=" + filepath.Dir(self) + ":" + filepath.Dir(realGit)}
	for _, args := range [][]string{
		{"status"}, {"--bare", "-C", "x", "update-ref", "r", "o"}, {"-Cx", "update-ref"}, {"--help", "update-ref"}, {},
		{"fetch", "--help"}, {"-C", "x", "fetch", "origin", "--help"}, {"fetchx"},
	} {
		var gotPath string
		var gotArgs, gotEnv []string
		execGit := func(path string, a, e []string) (int, error) {
			gotPath, gotArgs, gotEnv = path, a, e
			return 42, nil
		}
		arm := func() { t.Fatalf("%q: a handed-off call set up signals", args) }
		code := RunAsGit(context.Background(), arm, args, Streams{nil, io.Discard, io.Discard}, environ, self, execGit)
		if code != 42 || gotPath != realGit || !slices.Equal(gotArgs, args) {
			t.Errorf("%q: exit %d, exec %s %q", args, code, gotPath, gotArgs)
		}
		if !slices.Contains(gotEnv, shim.HandoffVar+"=1") {
			t.Errorf("%q: env %q lacks the hand-off", args, gotEnv)
		}
	}
	// Under refretry (its git children have BypassVar), even update-ref goes to git.
	called := false
	execGit := func(path string, a, e []string) (int, error) { called = true; return 0, nil }
	arm := func() { t.Fatal("an update-ref under refretry set up signals") }
	RunAsGit(context.Background(), arm, []string{"update-ref", "refs/heads/x", "HEAD"}, Streams{nil, io.Discard, io.Discard},
		append(slices.Clone(environ), shim.BypassVar+"=1"), self, execGit)
	if !called {
		t.Errorf("execGit was not called")
	}
}
