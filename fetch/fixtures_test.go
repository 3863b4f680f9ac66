package fetch

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"
)

// TestClassifyFixtures checks Classify against `git fetch` failures captured from real
// git 2.39 and 2.55 on both ref backends (testdata/fetch, made by
// scripts/capture-fetch-fixtures.sh): each fixture's class is what the failure is, and
// Classify must name exactly that class and retry exactly those it marks retry.
func TestClassifyFixtures(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("..", "testdata", "fetch", "*.txtar"))
	if err != nil || len(files) < 30 {
		t.Fatalf("found %d fixtures (%v): the corpus is missing", len(files), err)
	}
	combos, classes := map[string]bool{}, map[Class]bool{}
	for _, file := range files {
		ar, err := txtar.ParseFile(file)
		if err != nil {
			t.Fatal(err)
		}
		meta := map[string]string{}
		for _, line := range strings.Split(string(ar.Comment), "\n") {
			if k, v, ok := strings.Cut(line, ": "); ok {
				meta[k] = v
			}
		}
		combos[meta["git"]+"/"+meta["backend"]] = true
		classes[Class(meta["class"])] = true
		t.Run(filepath.Base(file), func(t *testing.T) {
			var stderr []byte
			found := false
			for _, f := range ar.Files {
				if f.Name == "stderr" {
					stderr, found = f.Data, true
				}
			}
			if !found {
				t.Fatal("fixture has no stderr section")
			}
			if meta["stderr-no-final-newline"] == "true" {
				stderr = []byte(strings.TrimSuffix(string(stderr), "\n"))
			}
			code, err := strconv.Atoi(meta["exit"])
			if err != nil || code == 0 || meta["git"] == "" || meta["backend"] == "" || meta["class"] == "" {
				t.Fatalf("fixture header incomplete or exit 0: %v", meta)
			}
			want := Class(meta["class"])
			wantRetry, err := strconv.ParseBool(meta["retry"])
			if err != nil {
				t.Fatalf("retry: %v", err)
			}
			if want.Retryable() != wantRetry {
				t.Fatalf("fixture says class %s but retry %v", want, wantRetry)
			}
			e := Classify(code, stderr)
			if e == nil {
				t.Fatalf("Classify(%d) = nil", code)
			}
			if e.Class != want || e.Class.Retryable() != wantRetry {
				t.Errorf("Classify: class %s (retry %v, line %q); real git: class %s (retry %v)\nnote: %s\nstderr:\n%s",
					e.Class, e.Class.Retryable(), e.Message, want, wantRetry, meta["note"], stderr)
			}
			if e.ExitCode != code {
				t.Errorf("ExitCode %d, want %d", e.ExitCode, code)
			}
		})
	}
	for _, want := range []string{"2.39.5/files", "2.55.0/files", "2.55.0/reftable"} {
		if !combos[want] {
			t.Errorf("no fixture from git %s", want)
		}
	}
	for _, want := range []Class{ClassLockContention, ClassLostRace, ClassTransport, ClassRejected,
		ClassDeclined, ClassNotFound, ClassAuth, ClassUsage, ClassOther} {
		if !classes[want] {
			t.Errorf("no fixture of class %s", want)
		}
	}
}
