package forgeapi

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/refretry/refretry/internal/harness/testutil"
)

// newTestRepo is an empty bare repository.
func newTestRepo(t *testing.T) *repo {
	t.Helper()
	g := testutil.NewGit(t)
	root := t.TempDir()
	r := &repo{git: g.Path, dir: root, env: testutil.NoMaintenanceEnv(t, root)}
	if _, err := r.run(nil, nil, "init", "-q", "--bare", filepath.Join(root, "r.git")); err != nil {
		t.Fatal(err)
	}
	r.dir = filepath.Join(root, "r.git")
	return r
}

// lsTree is `git ls-tree -r` of tree: "mode type path" lines (object ids left out
// but for gitlinks, whose id is the point).
func lsTree(t *testing.T, r *repo, tree string) string {
	t.Helper()
	out, err := r.run(nil, nil, "ls-tree", "-r", "--format=%(objectmode) %(objecttype) %(path)", tree)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestTreeEdit: changes applied path by path to a base tree with every mode give the
// tree git would have; empty directories disappear; paths that are not clean, or
// that go through a file, are refused.
func TestTreeEdit(t *testing.T) {
	t.Parallel()
	r := newTestRepo(t)
	blob, err := r.writeBlob([]byte("x\n"))
	if err != nil {
		t.Fatal(err)
	}
	file := entry{Mode: "100644", Type: "blob", OID: blob}
	base := newTreeEdit(r, "")
	for path, e := range map[string]entry{
		"README": file, "bin/run": {Mode: "100755", Type: "blob", OID: blob},
		"link": {Mode: "120000", Type: "blob", OID: blob}, "sub": {Mode: "160000", Type: "commit", OID: strings.Repeat("1", 40)},
		"a/b/c": file, "a/d": file, "lone/only": file,
	} {
		if err := base.set(path, e); err != nil {
			t.Fatal(err)
		}
	}
	baseTree, err := base.write()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := lsTree(t, r, baseTree), "100644 blob README\n100644 blob a/b/c\n100644 blob a/d\n100755 blob bin/run\n120000 blob link\n100644 blob lone/only\n160000 commit sub"; got != want {
		t.Fatalf("base tree:\n%s\nwant:\n%s", got, want)
	}

	ed := newTreeEdit(r, baseTree)
	steps := []func() error{
		func() error { return ed.set("a/b/new/deep", file) },
		func() error { return ed.set("bin", file) }, // a file replaces a directory
		func() error { _, err := ed.remove("a/b/c"); return err },
		func() error { _, err := ed.remove("lone/only"); return err }, // lone/ is left empty
	}
	for i, step := range steps {
		if err := step(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	tree, err := ed.write()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := lsTree(t, r, tree), "100644 blob README\n100644 blob a/b/new/deep\n100644 blob a/d\n100644 blob bin\n120000 blob link\n160000 commit sub"; got != want {
		t.Errorf("edited tree:\n%s\nwant:\n%s", got, want)
	}
	if e, ok, err := ed.get("sub"); err != nil || !ok || e.Mode != "160000" {
		t.Errorf(`get("sub") = %+v, %v, %v; want the gitlink`, e, ok, err)
	}
	if had, err := ed.remove("nowhere/file"); had || err != nil {
		t.Errorf(`remove("nowhere/file") = %v, %v; want false, nil`, had, err)
	}
	for _, bad := range []string{"", "/abs", "a//b", "a/../b", ".git/config", "README/under-a-file"} {
		var pe *pathError
		if err := ed.set(bad, file); !errors.As(err, &pe) {
			t.Errorf("set(%q) = %v, want a *pathError", bad, err)
		}
	}
}
