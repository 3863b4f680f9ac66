//go:build unix

package shim

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeBin writes an executable file named git (content makes it distinct) in dir.
func fakeBin(t *testing.T, dir, content string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "git")
	if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func getenv(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestShimFind(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	self := filepath.Join(root, "refretry")
	if err := os.WriteFile(self, []byte("refretry"), 0o755); err != nil {
		t.Fatal(err)
	}
	shimDir := filepath.Join(root, "shim")
	if err := os.MkdirAll(shimDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(self, filepath.Join(shimDir, "git")); err != nil {
		t.Fatal(err)
	}
	linkedDir := filepath.Join(root, "linked")
	if err := os.Symlink(shimDir, linkedDir); err != nil {
		t.Fatal(err)
	}
	real := fakeBin(t, filepath.Join(root, "real"), "real git")
	other := fakeBin(t, filepath.Join(root, "other"), "other git")
	noexec := filepath.Join(root, "noexec")
	if err := os.MkdirAll(noexec, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(noexec, "git"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	join := func(dirs ...string) string { return strings.Join(dirs, string(filepath.ListSeparator)) }
	realDir, otherDir := filepath.Dir(real), filepath.Dir(other)

	for _, tc := range []struct {
		name    string
		env     map[string]string
		want    string
		handoff string
		err     bool
	}{
		{name: "first after itself", env: map[string]string{"PATH": join(shimDir, realDir, otherDir)}, want: real, handoff: "1"},
		{name: "listed twice and through a symlink", env: map[string]string{"PATH": join(shimDir, linkedDir, shimDir, "", ".", "rel", noexec, realDir)}, want: real, handoff: "7"},
		{name: "REFRETRY_GIT wins", env: map[string]string{"PATH": join(shimDir, realDir), "REFRETRY_GIT": other}, want: other, handoff: "env"},
		{name: "REFRETRY_GIT naming the shim is passed over", env: map[string]string{"PATH": join(shimDir, realDir), "REFRETRY_GIT": filepath.Join(linkedDir, "git")}, want: real, handoff: "1"},
		{name: "REFRETRY_GIT missing", env: map[string]string{"PATH": join(shimDir, realDir), "REFRETRY_GIT": filepath.Join(root, "nope", "git")}, want: filepath.Join(root, "nope", "git"), handoff: "env"},
		{name: "handed off from PATH entry naming itself", env: map[string]string{"PATH": join(realDir, shimDir, otherDir), HandoffVar: "1"}, want: other, handoff: "2"},
		{name: "hand-off naming another git is ignored", env: map[string]string{"PATH": join(shimDir, realDir, otherDir), HandoffVar: "2"}, want: real, handoff: "1"},
		{name: "hand-off from REFRETRY_GIT naming itself", env: map[string]string{"PATH": join(shimDir, realDir), "REFRETRY_GIT": filepath.Join(shimDir, "git"), HandoffVar: "env"}, want: real, handoff: "1"},
		{name: "hand-off garbage", env: map[string]string{"PATH": join(shimDir, realDir), HandoffVar: "99x"}, want: real, handoff: "1"},
		{name: "only itself", env: map[string]string{"PATH": join(shimDir, linkedDir)}, err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := Find(getenv(tc.env), self)
			if tc.err {
				if !errors.Is(err, ErrNotFound) {
					t.Fatalf("Find = %+v, %v; want ErrNotFound", got, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Path != tc.want || got.Handoff != tc.handoff {
				t.Errorf("Find = %+v, want %s with hand-off %s", got, tc.want, tc.handoff)
			}
		})
	}
}

// TestShimFindTwoShims follows the hand-off from one shim to another and on to the
// real git: each step looks only further along PATH, so it ends, even with a shim
// listed twice.
func TestShimFindTwoShims(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	a := fakeBin(t, filepath.Join(root, "a"), "refretry one")
	b := fakeBin(t, filepath.Join(root, "b"), "refretry two")
	real := fakeBin(t, filepath.Join(root, "real"), "real git")
	env := map[string]string{"PATH": strings.Join([]string{filepath.Dir(a), filepath.Dir(b), filepath.Dir(a), filepath.Dir(real)}, string(filepath.ListSeparator))}
	self, seen := a, []string{}
	for range 5 {
		f, err := Find(getenv(env), self)
		if err != nil {
			t.Fatal(err)
		}
		seen = append(seen, f.Path)
		if f.Path == real {
			break
		}
		env[HandoffVar] = f.Handoff
		self = f.Path
	}
	if want := []string{b, a, real}; strings.Join(seen, " ") != strings.Join(want, " ") {
		t.Errorf("hand-offs %q, want %q", seen, want)
	}
}
