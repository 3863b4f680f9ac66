package testutil

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// WriteFiles writes files (path, relative to dir, to content; a content starting
// with "#!" is an executable) and symbolic links (path to target) under dir, making
// directories as needed.
func WriteFiles(t testing.TB, dir string, files, links map[string]string) {
	t.Helper()
	for path, content := range files {
		p := filepath.Join(dir, path)
		mode := os.FileMode(0o644)
		if strings.HasPrefix(content, "#!") {
			mode = 0o755
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}
	for path, target := range links {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, path)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, filepath.Join(dir, path)); err != nil {
			t.Fatal(err)
		}
	}
}
