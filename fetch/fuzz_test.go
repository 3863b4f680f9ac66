package fetch

import (
	"github.com/refretry/refretry/failure"
	"strings"
	"testing"
)

// FuzzClassify: any exit code and stderr give a class, never a panic; a retried
// verdict always has its evidence in git's own lines, and names the line it rests on.
func FuzzClassify(f *testing.F) {
	f.Add(1, []byte("error: cannot lock ref 'refs/remotes/origin/b9': is at 05d111e482e6d0736ef43a955e349439447142f3 but expected aa25968f8e1cbf1cb8a0ad0a5a4e9d1c4b0f2b53\n ! aa25968..05d111e  b9 -> origin/b9  (unable to update local ref)\n"))
	f.Add(1, []byte("error: cannot lock ref 'refs/remotes/origin/b3': Unable to create '/r/.git/refs/remotes/origin/b3.lock': File exists.\n\nAnother git process seems to be running in this repository, or the lock file may be stale\n"))
	f.Add(251, []byte("error: cannot lock references\nFrom file:///r\nerror: cannot lock references\n"))
	f.Add(128, []byte("fatal: couldn't find remote ref refs/heads/nope\nfatal: the remote end hung up unexpectedly\n"))
	f.Add(128, []byte("fatal: unable to connect to 127.0.0.1:\n127.0.0.1[0: 127.0.0.1]: errno=Connection refused\n\n"))
	f.Add(1, []byte("From file:///r\n ! [rejected]        t1         -> t1  (would clobber existing tag)\n"))
	f.Fuzz(func(t *testing.T, code int, stderr []byte) {
		e := Classify(code, stderr)
		if code == 0 {
			if e != nil {
				t.Fatalf("exit 0 classified as %v", e)
			}
			return
		}
		if e == nil || e.Class == "" || e.ExitCode != code {
			t.Fatalf("exit %d: %+v", code, e)
		}
		if !e.Class.Retryable() {
			return
		}
		if e.Message == "" || !strings.Contains(string(stderr), e.Message) {
			t.Fatalf("%s rests on %q, not a line of %q", e.Class, e.Message, stderr)
		}
		switch e.Class {
		case failure.LockContention:
			if e.Lock == nil {
				t.Fatalf("lock contention without its lock: %q", stderr)
			}
		case failure.LostRace:
			if e.Moved == nil || e.Moved.Ref == "" {
				t.Fatalf("lost race without its ref: %q", stderr)
			}
		}
	})
}
