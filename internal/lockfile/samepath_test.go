package lockfile

import (
	"os"
	"path/filepath"
	"testing"
)

// TestSamePath: git's spelling of a lock's path and refretry's are compared as paths,
// not as strings; the lock itself need not exist.
func TestSamePath(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	for _, d := range []string{"b/refs/heads", "r/.git/worktrees/wt", "r/.git/refs/heads", "other/refs/heads"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(root, "b"), filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	p := func(s string) string { return root + "/" + s }
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{p("b/./refs/heads/x.lock"), p("b/refs/heads/x.lock"), true},                            // bare repository entered by -C or cd
		{p("r/.git/worktrees/wt/../../refs/heads/x.lock"), p("r/.git/refs/heads/x.lock"), true}, // a linked worktree's common directory
		{p("link/refs/heads/x.lock"), p("b/refs/heads/x.lock"), true},                           // the same directory by a symbolic link
		{p("b/refs/heads/x.lock"), p("b/refs/heads/y.lock"), false},                             // another ref
		{p("b/refs/heads/x.lock"), p("other/refs/heads/x.lock"), false},                         // another repository
		{p("missing/refs/heads/x.lock"), p("missing/./refs/heads/x.lock"), true},                // equal once cleaned, even where nothing exists
		{p("missing/refs/heads/x.lock"), p("b/refs/heads/x.lock"), false},                       // a directory that does not exist
		{"", p("b/refs/heads/x.lock"), false},
	} {
		if got := SamePath(tc.a, tc.b); got != tc.want {
			t.Errorf("SamePath(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}
