//go:build unix

package shim

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestShimInstall(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	self := filepath.Join(root, "bin", "refretry")
	if err := os.MkdirAll(filepath.Dir(self), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(self, []byte("refretry"), 0o755); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "data", "refretry", "shim")
	entry, err := Install(dir, self)
	if err != nil {
		t.Fatal(err)
	}
	if target, err := os.Readlink(entry); err != nil || target != self {
		t.Fatalf("entry %s -> %q (%v), want a link to %s", entry, target, err, self)
	}
	// Again: replaces its own entry.
	if _, err := Install(dir, self); err != nil {
		t.Fatalf("second install: %v", err)
	}
	// Another refretry's link is a shim too (an upgrade).
	if err := os.Remove(entry); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/opt/old/refretry", entry); err != nil {
		t.Fatal(err)
	}
	if _, err := Install(dir, self); err != nil {
		t.Fatalf("install over an older shim: %v", err)
	}
	removed, err := Uninstall(dir, self)
	if err != nil || !removed {
		t.Fatalf("Uninstall = %v, %v", removed, err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the emptied directory is still there: %v", err)
	}
	if removed, err := Uninstall(dir, self); err != nil || removed {
		t.Errorf("second Uninstall = %v, %v", removed, err)
	}

	// A copy of refretry (as Windows installs it) is a shim too.
	copyDir := filepath.Join(root, "copy")
	if err := os.MkdirAll(copyDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := copyFile(self, filepath.Join(copyDir, "git")); err != nil {
		t.Fatal(err)
	}
	if removed, err := Uninstall(copyDir, self); err != nil || !removed {
		t.Errorf("Uninstall of a copy = %v, %v", removed, err)
	}

	// A real git in the directory is never touched.
	realDir := filepath.Join(root, "usr-bin")
	real := fakeBin(t, realDir, "real git")
	var ns *NotShimError
	if _, err := Install(realDir, self); !errors.As(err, &ns) || ns.Path != real {
		t.Errorf("Install over a real git: %v", err)
	}
	if _, err := Uninstall(realDir, self); !errors.As(err, &ns) {
		t.Errorf("Uninstall of a real git: %v", err)
	}
	if b, _ := os.ReadFile(real); string(b) != "real git" {
		t.Errorf("the real git was changed: %q", b)
	}
}

func TestShimDefaultDir(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		env  map[string]string
		want string
		err  bool
	}{
		{env: map[string]string{"XDG_DATA_HOME": "/xdg", "HOME": "/home/u"}, want: "/xdg/refretry/shim"},
		{env: map[string]string{"XDG_DATA_HOME": "relative", "HOME": "/home/u"}, want: "/home/u/.local/share/refretry/shim"},
		{env: map[string]string{"HOME": "/home/u"}, want: "/home/u/.local/share/refretry/shim"},
		{env: map[string]string{}, err: true},
	} {
		got, err := DefaultDir(getenv(tc.env))
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("DefaultDir(%v) = %q, %v; want %q", tc.env, got, err, tc.want)
		}
	}
}
