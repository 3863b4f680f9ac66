package push

import (
	"github.com/refretry/refretry/failure"
	"strings"
	"testing"
)

// FuzzParsePorcelain: any output parses without panicking, and every ref line that
// parses prints back as itself.
func FuzzParsePorcelain(f *testing.F) {
	f.Add([]byte(porcelain(" \trefs/heads/main:refs/heads/main\t51cf357..8bb6dea", "!\t:refs/heads/x\t[remote rejected] (deletion prohibited)")))
	f.Add([]byte("To x\n=\tHEAD~1:refs/heads/s2\t[up to date]\nDone\n"))
	f.Add([]byte("!\ta:b:c\t[rejected] (x (y))\n"))
	f.Fuzz(func(t *testing.T, out []byte) {
		rep := ParsePorcelain(out)
		for _, s := range rep.Refs {
			line := s.String()
			again, ok := parseRefLine(line)
			if !ok || again != s {
				t.Fatalf("%q parsed as %+v, printed %q, reparsed %+v", out, s, line, again)
			}
		}
	})
}

// FuzzClassify: any exit code, stdout and stderr give a class, never a panic; a
// retryable verdict always has its evidence.
func FuzzClassify(f *testing.F) {
	f.Add(1, []byte(porcelain("!\trefs/heads/main:refs/heads/x\t[remote rejected] (reference already exists)")), []byte(filesLock255))
	f.Add(1, []byte(porcelain("!\trefs/heads/main:refs/heads/x\t[remote rejected] (failed to update ref)")), []byte(filesLock239))
	f.Add(128, []byte(nil), []byte("error: RPC failed; HTTP 503 curl 22 The requested URL returned error: 503\n"))
	f.Add(1, []byte(porcelain("!\trefs/heads/main:refs/heads/main\t[remote rejected] (atomic transaction failed)")), []byte(reftableLock))
	f.Fuzz(func(t *testing.T, code int, stdout, stderr []byte) {
		e := Classify(code, stdout, stderr)
		if code == 0 {
			if e != nil {
				t.Fatalf("exit 0 classified as %v", e)
			}
			return
		}
		if e == nil || e.Class == "" {
			t.Fatalf("exit %d: no class", code)
		}
		switch e.Class {
		case failure.LockContention:
			if !strings.Contains(string(stderr), "remote:") {
				t.Fatalf("lock contention without a remote: line: %q", stderr)
			}
		case failure.Transport:
			if len(ParsePorcelain(stdout).Refs) > 0 && !strings.Contains(string(stdout), summaryRemoteFailure) {
				t.Fatalf("transport despite ref lines: %q", stdout)
			}
		}
	})
}
