package testutil

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"testing/fstest"
)

// Starts hands out copies of directory trees that many tests start from (a remote and
// a clone, say): each tree is built once per test binary, by the first test that
// asks for its key, kept in memory, and written out afresh for every test that asks.
// Building the same repositories in every subtest is most of what some matrix tests
// cost; a copy is the same repository, as long as the build depends only on the key
// (the hermetic environment fixes the dates, so the commits are the same). Paths
// written inside the tree (a clone's origin URL) name the builder's directory: the
// caller fixes them.
type Starts[T any] struct {
	mu sync.Mutex
	m  map[string]*start[T]
}

type start[T any] struct {
	once  sync.Once
	built bool
	tree  fstest.MapFS
	dir   string // where it was built
	v     T
}

// Copy writes key's tree into a new temporary directory of t and returns it, with
// the value build returned and the directory the tree was built in. build runs once
// per key, in the first test that asks, with a directory to build in; its failures
// are that test's, and every later test asking for the key fails, saying so.
func (s *Starts[T]) Copy(t testing.TB, key string, build func(t testing.TB, dir string) T) (dir, builtIn string, v T) {
	t.Helper()
	s.mu.Lock()
	if s.m == nil {
		s.m = map[string]*start[T]{}
	}
	st := s.m[key]
	if st == nil {
		st = &start[T]{}
		s.m[key] = st
	}
	s.mu.Unlock()
	st.once.Do(func() {
		st.dir = t.TempDir()
		st.v = build(t, st.dir)
		tree, err := load(st.dir)
		if err != nil {
			t.Fatalf("reading the start %s: %v", key, err)
		}
		st.tree, st.built = tree, true
	})
	if !st.built {
		t.Fatalf("the start %s was not built: see the first test that built it", key)
	}
	dir = t.TempDir()
	if err := os.CopyFS(dir, st.tree); err != nil {
		t.Fatalf("copying the start %s: %v", key, err)
	}
	return dir, st.dir, st.v
}

// load reads the tree under dir into memory, empty directories and modes included.
func load(dir string) (fstest.MapFS, error) {
	tree := fstest.MapFS{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == dir {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		f := &fstest.MapFile{Mode: info.Mode(), ModTime: info.ModTime()}
		if d.Type().IsRegular() {
			if f.Data, err = os.ReadFile(path); err != nil {
				return err
			}
		} else if !d.IsDir() {
			return &fs.PathError{Op: "load", Path: path, Err: fs.ErrInvalid} // os.CopyFS copies files and directories only
		}
		tree[filepath.ToSlash(rel)] = f
		return nil
	})
	return tree, err
}

// Relocate points the paths that file (in a copy at dir of a start built in builtIn)
// names under builtIn at dir instead, as a clone's origin must name the copy's
// remote. A file that names nothing under builtIn fails the test: the caller expected
// a path there.
func Relocate(t testing.TB, file, builtIn, dir string) {
	t.Helper()
	text, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	from := []byte(builtIn + string(filepath.Separator))
	if !bytes.Contains(text, from) {
		t.Fatalf("%s names nothing under %s", file, builtIn)
	}
	if err := os.WriteFile(file, bytes.ReplaceAll(text, from, []byte(dir+string(filepath.Separator))), 0o644); err != nil {
		t.Fatal(err)
	}
}
