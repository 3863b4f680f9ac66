package transaction

import (
	"github.com/refretry/refretry/failure"
	"path/filepath"
	"testing"

	"github.com/refretry/refretry/internal/harness/capture"
)

// FuzzClassify checks Classify on any exit code and stderr: the exit code is kept; the
// class is a known one; exit 129 is invalid input; a lock-contention verdict (the
// only one retried) needs exit 1 or 128 and a live *LockedError; a stale-lock verdict
// carries a stale *LockedError; a conflict carries its typed detail; and lines before
// git's final message (hints, warnings) never change the verdict. The captured real
// stderr in testdata/stderr seeds it.
func FuzzClassify(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("..", "testdata", "stderr", "*.txtar"))
	for _, file := range files {
		c, err := capture.Read(file)
		if err != nil || !c.HasStderr {
			continue
		}
		f.Add(128, c.Stderr)
		f.Add(1, c.Stderr)
	}
	f.Add(128, []byte("fatal: cannot lock references\n"))
	f.Add(129, []byte("usage: git update-ref\n"))
	f.Fuzz(func(t *testing.T, code int, stderr []byte) {
		e := Classify(code, stderr)
		if e.ExitCode != code {
			t.Fatalf("exit code %d, want %d", e.ExitCode, code)
		}
		switch l := e.Lock; e.Class {
		case failure.LockContention:
			if code != 1 && code != 128 {
				t.Fatalf("lock contention from exit %d", code)
			}
			if l == nil || l.Stale {
				t.Fatalf("lock contention without a live lock: %#v", l)
			}
		case failure.StaleLock:
			if l == nil || !l.Stale || l.StaleReason == "" {
				t.Fatalf("stale lock without a stale lock: %#v", l)
			}
		case failure.Conflict:
			if e.Moved == nil && e.Message == "" {
				t.Fatalf("conflict without its detail: %#v", e)
			}
		case failure.InvalidInput, failure.Other:
		default:
			t.Fatalf("unknown class %q", e.Class)
		}
		if code == 129 && e.Class != failure.InvalidInput {
			t.Fatalf("exit 129 classified %s", e.Class)
		}
		if code == 129 {
			return // usage output is kept whole
		}
		hinted := Classify(code, append([]byte("hint: something\nwarning: else\n"), stderr...))
		if hinted.Class != e.Class {
			t.Fatalf("leading hint and warning lines changed the class from %s to %s", e.Class, hinted.Class)
		}
	})
}
