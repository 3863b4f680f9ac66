package testutil

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// TestStarts: a key's tree is built once; every copy has its files, modes and empty
// directories, and writing to one copy leaves the others alone.
func TestStarts(t *testing.T) {
	var s Starts[string]
	builds := 0
	build := func(t testing.TB, dir string) string {
		builds++
		if err := os.MkdirAll(filepath.Join(dir, "a", "empty"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "a", "hook"), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return "v"
	}
	one, builtIn, v := s.Copy(t, "k", build)
	two, builtIn2, _ := s.Copy(t, "k", build)
	if builds != 1 || v != "v" || one == two || builtIn != builtIn2 || one == builtIn {
		t.Fatalf("builds %d, value %q, copies %s and %s built in %s and %s", builds, v, one, two, builtIn, builtIn2)
	}
	if err := os.WriteFile(filepath.Join(one, "a", "hook"), []byte("changed"), 0o755); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(filepath.Join(two, "a", "hook"))
	if err != nil || info.Mode().Perm()&0o100 == 0 || info.Size() != int64(len("#!/bin/sh\n")) {
		t.Errorf("the second copy's hook: %v, %v", info, err)
	}
	if info, err := os.Stat(filepath.Join(two, "a", "empty")); err != nil || !info.IsDir() {
		t.Errorf("the empty directory: %v, %v", info, err)
	}
	if s.Copy(t, "other", build); builds != 2 {
		t.Errorf("another key: %d builds, want 2", builds)
	}
}

// TestStartsFailedBuild: when the build stops (t.Fatal ends it in runtime.Goexit),
// a test asking for the key later fails, saying the start was not built.
func TestStartsFailedBuild(t *testing.T) {
	var s Starts[int]
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Copy(&recorder{TB: t}, "k", func(testing.TB, string) int { runtime.Goexit(); return 0 })
	}()
	<-done
	later := &recorder{TB: t}
	s.Copy(later, "k", func(testing.TB, string) int { t.Error("a second build"); return 0 })
	if want := "the start k was not built: see the first test that built it"; later.fatal != want {
		t.Errorf("Fatalf %q, want %q", later.fatal, want)
	}
}

// TestRelocate: the paths under the build's directory name the copy's; a file naming
// none fails the test.
func TestRelocate(t *testing.T) {
	file := filepath.Join(t.TempDir(), "config")
	os.WriteFile(file, []byte("url = /b/1/remote.git\nother = /b/10/x\n"), 0o644)
	Relocate(t, file, "/b/1", "/c/2")
	if got, _ := os.ReadFile(file); string(got) != "url = /c/2/remote.git\nother = /b/10/x\n" {
		t.Errorf("relocated:\n%s", got)
	}
	r := &recorder{TB: t}
	Relocate(r, file, "/b/1", "/c/2")
	if want := file + " names nothing under /b/1"; r.fatal != want {
		t.Errorf("Fatalf %q, want %q", r.fatal, want)
	}
}
