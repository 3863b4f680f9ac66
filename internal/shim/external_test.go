//go:build unix

package shim

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/refretry/refretry/internal/gitexec"
	"github.com/refretry/refretry/internal/platform"
)

// TestShimLookExternal checks, on a tree of files standing in for git's exec path and
// PATH, which calls LookExternal takes over and the program, directory and environment
// it gives them: git's order (exec path, then PATH), git's variables for each global
// option, the shim first on PATH, and a hand-off to git whenever the shim cannot be
// sure.
func TestShimLookExternal(t *testing.T) {
	t.Parallel()
	if platform.IsTerminal(os.Stdout) {
		t.Skip("stdout is a terminal: LookExternal leaves every call to git (pager.<name>)")
	}
	root := t.TempDir()
	dir := func(name string) string {
		d := filepath.Join(root, name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	shimDir, realDir, execDir, binDir, sub := dir("shim"), dir("real"), dir("exec"), dir("bin"), dir("sub")
	write := func(p, body string, mode os.FileMode) string {
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	script := "#!/bin/sh\nexit 0\n"
	self := write(filepath.Join(shimDir, "git"), "the shim", 0o755)
	// The real git, asked for its exec path, prints execDir.
	realGit := write(filepath.Join(realDir, "git"), "#!/bin/sh\necho "+execDir+"\n", 0o755)
	write(filepath.Join(execDir, "git"), "git in its exec path", 0o755)
	if err := os.Symlink("git", filepath.Join(execDir, "git-newbuiltin")); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(realGit, filepath.Join(binDir, "git-linkedbuiltin")); err != nil {
		t.Fatal(err)
	}
	inExec := write(filepath.Join(execDir, "git-both"), script, 0o755)
	write(filepath.Join(binDir, "git-both"), script, 0o755)
	foo := write(filepath.Join(binDir, "git-foo"), script, 0o755)
	write(filepath.Join(binDir, "git-status"), script, 0o755)
	write(filepath.Join(binDir, "git-noexec"), script, 0o644)
	path := strings.Join([]string{shimDir, realDir, binDir}, ":")
	base := []string{"PATH=" + path, "HOME=" + root, HandoffVar + "=1", "GIT_EXEC_PATH=" + execDir}

	x, ok := LookExternal(mustParse(t, "foo", "a", "--help"), base, realGit, self)
	if !ok || x.Path != foo || !slices.Equal(x.Args, []string{"git-foo", "a", "--help"}) || x.Dir != "" {
		t.Fatalf("git foo: %v %+v", ok, x)
	}
	wantEnv := []string{"HOME=" + root, "GIT_EXEC_PATH=" + execDir, "PATH=" + shimDir + ":" + execDir + ":" + path}
	if !slices.Equal(x.Env, wantEnv) {
		t.Errorf("git foo: env\n%q\nwant\n%q", x.Env, wantEnv)
	}
	if x, ok := LookExternal(mustParse(t, "both"), base, realGit, self); !ok || x.Path != inExec {
		t.Errorf("git both: %v %s, want the exec path's %s", ok, x.Path, inExec)
	}

	// Without GIT_EXEC_PATH, the real git names its exec path.
	noExec := slices.DeleteFunc(slices.Clone(base), func(kv string) bool { return strings.HasPrefix(kv, "GIT_EXEC_PATH=") })
	if x, ok := LookExternal(mustParse(t, "both"), noExec, realGit, self); !ok || x.Path != inExec ||
		gitexec.Getenv(x.Env, "GIT_EXEC_PATH") != execDir {
		t.Errorf("git both, exec path from git: %v %+v", ok, x)
	}
	// --exec-path= replaces it: git-both is then binDir's.
	if x, ok := LookExternal(mustParse(t, "--exec-path="+binDir, "both"), base, realGit, self); !ok ||
		x.Path != filepath.Join(binDir, "git-both") || gitexec.Getenv(x.Env, "GIT_EXEC_PATH") != binDir ||
		gitexec.Getenv(x.Env, "PATH") != shimDir+":"+binDir+":"+path {
		t.Errorf("--exec-path: %v %+v", ok, x)
	}

	// Global options become git's variables; -C moves the program.
	x, ok = LookExternal(mustParse(t, "-C", root, "-C", "sub", "--git-dir", "gd", "--work-tree=wt", "--namespace", "ns",
		"--no-pager", "--literal-pathspecs", "--noglob-pathspecs", "--no-optional-locks", "--shallow-file", "s", "foo"),
		base, realGit, self)
	if !ok || x.Dir != sub {
		t.Fatalf("options: %v %+v", ok, x)
	}
	for k, v := range map[string]string{"GIT_DIR": "gd", "GIT_WORK_TREE": "wt", "GIT_NAMESPACE": "ns", "GIT_PAGER": "cat",
		"GIT_LITERAL_PATHSPECS": "1", "GIT_NOGLOB_PATHSPECS": "1", "GIT_OPTIONAL_LOCKS": "0"} {
		if got := gitexec.Getenv(x.Env, k); got != v {
			t.Errorf("options: %s=%q, want %q", k, got, v)
		}
	}
	x, ok = LookExternal(mustParse(t, "-C", sub, "--bare", "foo"), base, realGit, self)
	if real, _ := filepath.EvalSymlinks(sub); !ok || gitexec.Getenv(x.Env, "GIT_DIR") != real ||
		gitexec.Getenv(x.Env, "GIT_IMPLICIT_WORK_TREE") != "0" {
		t.Errorf("--bare: %v %+v", ok, x)
	}
	x, ok = LookExternal(mustParse(t, "--git-dir=gd", "--bare", "foo"), base, realGit, self)
	if !ok || gitexec.Getenv(x.Env, "GIT_DIR") != "gd" {
		t.Errorf("--git-dir then --bare: %v %+v", ok, x)
	}

	// Everything else goes to git.
	for _, args := range [][]string{
		{"status"}, {"newbuiltin"}, {"linkedbuiltin"}, {"noexec"}, {"missing"}, {"foo", "--help"},
		{"-c", "a.b=c", "foo"}, {"--config-env=a.b=HOME", "foo"}, {"-p", "foo"}, {"--no-advice", "foo"},
		{"--attr-source=HEAD", "foo"}, {"--no-lazy-fetch", "foo"}, {"-C", filepath.Join(root, "nodir"), "foo"},
		{"-C", foo, "foo"}, {"../bin/git-foo"}, {"--version"}, {"-h"}, {"--exec-path=", "foo"},
	} {
		if x, ok := LookExternal(mustParse(t, args...), base, realGit, self); ok {
			t.Errorf("%q: taken over as %+v", args, x)
		}
	}
	// Not on PATH, the shim has no directory to put first.
	off := []string{"PATH=" + realDir + ":" + binDir, "GIT_EXEC_PATH=" + execDir}
	if x, ok := LookExternal(mustParse(t, "foo"), off, realGit, self); ok {
		t.Errorf("shim not on PATH: taken over as %+v", x)
	}
}

func mustParse(t *testing.T, args ...string) Call {
	t.Helper()
	c, ok := Parse(args)
	if !ok {
		t.Fatalf("Parse(%q) failed", args)
	}
	return c
}
