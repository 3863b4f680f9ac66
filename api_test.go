package main

import (
	"bytes"
	"errors"
	"flag"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/diff"
)

var update = flag.Bool("update", false, "rewrite testdata/api from go doc -all")

// apiDir holds each public package's `go doc -all`, as <path in the module>.txt.
const apiDir = "testdata/api"

// updateAPI is how to accept a change of the public API.
const updateAPI = "go test -run '^TestAPI$' -update ."

// TestAPI: every public package's documented API (go doc -all) is its golden file in
// testdata/api, so that a change of it, an export added above all, shows in review.
// Public are the module's packages that are not commands (package main: refretry,
// bench, examples) and not under internal/; a new one has no golden file, and fails
// until -update writes it. -update rewrites the files and removes those of packages
// that are gone.
func TestAPI(t *testing.T) {
	t.Parallel()
	goBin := goCommand(t)
	pkgs := publicPackages(t, goBin)
	if len(pkgs) == 0 {
		t.Fatal("go list found no public package")
	}
	for _, pkg := range pkgs {
		t.Run(pkg, func(t *testing.T) {
			t.Parallel()
			got := goOutput(t, goBin, "doc", "-all", "./"+pkg)
			path := filepath.Join(apiDir, filepath.FromSlash(pkg)+".txt")
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("%s is a public package with no %s: if it is meant to be public, write it with\n\t%s", pkg, path, updateAPI)
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := diff.Diff(path, want, "go doc -all ./"+pkg, got); d != nil {
				t.Errorf("the public API of %s changed; if that is meant, accept it with\n\t%s\n%s", pkg, updateAPI, clip(d, 60))
			}
		})
	}
	// A golden file whose package is gone or no longer public.
	err := filepath.WalkDir(apiDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(apiDir, path)
		if slices.Contains(pkgs, strings.TrimSuffix(filepath.ToSlash(rel), ".txt")) {
			return nil
		}
		if *update {
			return os.Remove(path)
		}
		t.Errorf("%s is no public package's: %s removes it", path, updateAPI)
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Error(err)
	}
}

// goCommand is the go command on PATH (go test puts the one that runs it first).
func goCommand(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// publicPackages are the module's public packages, by path in the module ("retry").
func publicPackages(t *testing.T, goBin string) []string {
	t.Helper()
	var pkgs []string
	for line := range strings.Lines(string(goOutput(t, goBin, "list", "-f", "{{.Name}} {{.ImportPath}} {{.Module.Path}}", "./..."))) {
		f := strings.Fields(line)
		if len(f) != 3 {
			t.Fatalf("go list: %q", line)
		}
		name, importPath, module := f[0], f[1], f[2]
		rel, ok := strings.CutPrefix(importPath, module+"/")
		if !ok || name == "main" || slices.Contains(strings.Split(rel, "/"), "internal") {
			continue
		}
		pkgs = append(pkgs, rel)
	}
	return pkgs
}

// goOutput runs the go command in the module's root and returns its stdout. (Not with
// GOPROXY=off: with an empty module cache, go1.26's go doc then falls back to reading
// the directory and prints `import "."` in every header.)
func goOutput(t *testing.T, goBin string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(goBin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return out
}

// clip is text cut to its first n lines.
func clip(text []byte, n int) string {
	lines := strings.SplitAfter(string(text), "\n")
	if len(lines) <= n {
		return string(text)
	}
	return strings.Join(lines[:n], "") + "…\n"
}
