package fetch

import (
	"github.com/refretry/refretry/failure"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/refretry/refretry/internal/harness/capture"
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
	combos, classes := map[string]bool{}, map[failure.Class]bool{}
	for _, file := range files {
		c, err := capture.Read(file)
		if err != nil {
			t.Fatal(err)
		}
		meta, stderr := c.Meta, c.Stderr
		combos[meta["git"]+"/"+meta["backend"]] = true
		classes[failure.Class(meta["class"])] = true
		t.Run(filepath.Base(file), func(t *testing.T) {
			if !c.HasStderr {
				t.Fatal("fixture has no stderr section")
			}
			code, err := strconv.Atoi(meta["exit"])
			if err != nil || code == 0 || meta["git"] == "" || meta["backend"] == "" || meta["class"] == "" {
				t.Fatalf("fixture header incomplete or exit 0: %v", meta)
			}
			want := failure.Class(meta["class"])
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
	for _, want := range []failure.Class{failure.LockContention, failure.LostRace, failure.Transport, failure.Rejected,
		failure.Declined, failure.NotFound, failure.Auth, failure.Usage, failure.Other} {
		if !classes[want] {
			t.Errorf("no fixture of class %s", want)
		}
	}
}
