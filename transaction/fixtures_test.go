package transaction

import (
	"github.com/refretry/refretry/failure"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/refretry/refretry/internal/harness/capture"
)

// TestClassifyFixtures checks the classifier against stderr captured from real git
// 2.39 and 2.55 on both backends (testdata/stderr, made by scripts/capture-fixtures.sh):
// every fixture marked retry is lock contention, and nothing else is.
func TestClassifyFixtures(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("..", "testdata", "stderr", "*.txtar"))
	if err != nil || len(files) < 50 {
		t.Fatalf("found %d fixtures (%v): the corpus is missing", len(files), err)
	}
	retried, versions := 0, map[string]bool{}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			c, err := capture.Read(file)
			if err != nil {
				t.Fatal(err)
			}
			meta, stderr := c.Meta, c.Stderr
			code, err := strconv.Atoi(meta["exit"])
			if err != nil || meta["git"] == "" || meta["class"] == "" {
				t.Fatalf("fixture header incomplete: %v", meta)
			}
			versions[meta["git"]+"/"+meta["backend"]] = true
			if code == 0 {
				// git succeeded (batch-mode rejections are passed through, never retried);
				// refretry does not classify a success.
				if meta["retry"] == "true" {
					t.Fatal("a fixture that exited 0 cannot be retried")
				}
				return
			}
			e := Classify(code, stderr)
			wantRetry := meta["retry"] == "true"
			if gotRetry := e.Class == failure.LockContention; gotRetry != wantRetry {
				t.Errorf("class %s (retry %v), fixture says class %s retry %v\nstderr:\n%s", e.Class, gotRetry, meta["class"], wantRetry, stderr)
			}
			if wantRetry {
				retried++
			}
			if want := failure.Class(meta["class"]); e.Class != want && !(want == failure.Other && e.Class == failure.InvalidInput) {
				t.Logf("class %s, fixture says %s (not a retry decision)", e.Class, want)
			}
		})
	}
	if retried == 0 {
		t.Error("no retryable fixture was checked")
	}
	for _, want := range []string{"2.39.5/files", "2.55.0/files", "2.55.0/reftable"} {
		if !versions[want] {
			t.Errorf("no fixture from git %s", want)
		}
	}
}
