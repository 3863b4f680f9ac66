// Command stresstests prints the tests whose size the scale knob chooses
// (REFRETRY_TEST_SCALE, internal/harness/testutil), one "<package dir> <TestName>"
// line each: the tests the stress tier (scripts/test.sh --stress) runs again at their
// full size.
//
// A test is sized when it calls one of testutil's sizing functions (Scale, Stress,
// Hunt, Cells), directly or through functions and methods of its own package's test
// files: push's tests, for one, take their git-version matrix from a helper that asks
// testutil.Cells. Functions are matched by name within a package, so a name that two
// types share counts as one; that can only add tests to the list, never drop one.
//
//	go run ./internal/harness/stresstests [dir ...]   (default: the module, from .)
package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// sizing are testutil's functions that read the knob.
var sizing = map[string]bool{"Scale": true, "Stress": true, "Hunt": true, "Cells": true}

func main() {
	roots := os.Args[1:]
	if len(roots) == 0 {
		roots = []string{"."}
	}
	for _, root := range roots {
		lines, err := scan(root)
		if err != nil {
			fmt.Fprintln(os.Stderr, "stresstests:", err)
			os.Exit(1)
		}
		for _, l := range lines {
			fmt.Println(l)
		}
	}
}

// scan walks root and returns the sized tests of every package under it, sorted.
func scan(root string) ([]string, error) {
	files := map[string][]string{} // dir -> its _test.go files
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, "_test.go") {
			files[filepath.Dir(path)] = append(files[filepath.Dir(path)], path)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var lines []string
	for dir, fs := range files {
		tests, err := sized(fs)
		if err != nil {
			return nil, err
		}
		if !filepath.IsAbs(dir) && dir != "." && !strings.HasPrefix(dir, "..") {
			dir = "./" + dir // a path go test takes for a directory, not a package name
		}
		for _, t := range tests {
			lines = append(lines, dir+" "+t)
		}
	}
	sort.Strings(lines)
	return lines, nil
}

// sized returns the sized tests among one package's test files.
func sized(files []string) ([]string, error) {
	fset := token.NewFileSet()
	calls := map[string]map[string]bool{} // function name -> names it uses
	direct := map[string]bool{}           // functions that call a sizing function
	var tests []string
	for _, f := range files {
		file, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		testutil := importName(file, "/internal/harness/testutil")
		for _, decl := range file.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			name := fn.Name.Name
			if fn.Recv == nil && strings.HasPrefix(name, "Test") {
				tests = append(tests, name)
			}
			if calls[name] == nil {
				calls[name] = map[string]bool{}
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.SelectorExpr: // its Sel is visited as an Ident next
					if x, ok := n.X.(*ast.Ident); ok && testutil != "" && x.Name == testutil && sizing[n.Sel.Name] {
						direct[name] = true
					}
				case *ast.Ident:
					calls[name][n.Name] = true
				}
				return true
			})
		}
	}
	// A function is sized when it, or a function it names, is: spread to a fixed point.
	for changed := true; changed; {
		changed = false
		for fn, used := range calls {
			if direct[fn] {
				continue
			}
			for u := range used {
				if direct[u] && u != fn {
					direct[fn], changed = true, true
					break
				}
			}
		}
	}
	var out []string
	for _, t := range tests {
		if direct[t] {
			out = append(out, t)
		}
	}
	return out, nil
}

// importName is the name a file gives the package whose path ends in suffix, or "".
func importName(f *ast.File, suffix string) string {
	for _, imp := range f.Imports {
		if !strings.HasSuffix(strings.Trim(imp.Path.Value, `"`), suffix) {
			continue
		}
		if imp.Name != nil {
			return imp.Name.Name
		}
		return filepath.Base(strings.Trim(imp.Path.Value, `"`))
	}
	return ""
}
