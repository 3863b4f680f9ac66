package fetch

import (
	"github.com/refretry/refretry/failure"
	"testing"
)

// TestClassifyMaintenanceAndPrune: real stderr the soak met (git 2.39 and 2.55, both
// backends). --prune wraps a lock failure in "could not delete reference(s)", and
// auto-maintenance's lines after the fetch decide nothing.
func TestClassifyMaintenanceAndPrune(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		code   int
		stderr string
		want   failure.Class
	}{
		{"prune, several refs, packed-refs.lock (2.39)", 1, "error: could not delete references: Unable to create '/tmp/refretry-soak-974666641/repo/.git/packed-refs.lock': File exists.\n\nAnother git process seems to be running in this repository, e.g.\nan editor opened by 'git commit'. Please make sure all processes\nare terminated then try again. If it still fails, a git process\nmay have crashed in this repository earlier:\nremove the file manually to continue.\nFrom /tmp/refretry-soak-974666641/remote\n - [deleted]         (none)     -> soak/b2\n - [deleted]         (none)     -> soak/b3\n - [deleted]         (none)     -> soak/b4\n", failure.LockContention},
		{"prune, the ref's own lock, and lost races (2.55)", 1, "error: could not delete reference refs/remotes/soak/b5: cannot lock ref 'refs/remotes/soak/b5': Unable to create '/tmp/refretry-soak-3236624727/repo/.git/refs/remotes/soak/b5.lock': File exists.\n\nAnother git process seems to be running in this repository, or the lock file may be stale\nFrom /tmp/refretry-soak-3236624727/remote\n - [deleted]         (none)     -> soak/b5\nerror: cannot lock ref 'refs/remotes/soak/b1': is at ace97265316618f10fc14b0f3f61f088bc7929b0 but expected ff258aa61ea630e0d67a3e9caf29ffd3a6843661\nerror: cannot lock ref 'refs/remotes/soak/b3': is at f15de248ddb4a52d289cd1510a6622381a3d540b but expected 28e33c34c024a8dc28204fcd8c1bc4ccd37ed2f4\nerror: cannot lock ref 'refs/remotes/soak/b4': is at dac8e5772ccc75a090b4118d77e1648ea2d5cf70 but expected b3f89098b2cdeb5881b2bb8ca34f56b8667eaf47\nerror: cannot lock ref 'refs/remotes/soak/b7': is at 6c59ed71cb2c9275df90227fa66c817d1c69801d but expected 023174140ad74f5def466403922d1afa93898305\n ! ff258aa..ace9726 b1         -> soak/b1  (unable to update local ref)\n ! 28e33c3..f15de24 b3         -> soak/b3  (unable to update local ref)\n ! b3f8909..dac8e57 b4         -> soak/b4  (unable to update local ref)\n * [new branch] b6         -> soak/b6\n ! 0231741..6c59ed7 b7         -> soak/b7  (unable to update local ref)\n", failure.LockContention},
		{"compaction concurrently modified after a held stack (2.55 reftable)", 251, "From /tmp/refretry-soak-3432669637/remote\n   ff258aa..ace9726  b1         -> soak/b1\n   75a14f5..66b596d  b2         -> soak/b2\n * [new branch]      b3         -> soak/b3\nerror: cannot lock references\nerror: unable to compact stack: data concurrently modified\nerror: task 'pack-refs' failed\n", failure.LockContention},
		{"plural on reftable", 1, "error: could not delete references: cannot lock references\n", failure.LockContention},
		{"2.39 follow-up line", 1, "error: could not delete reference refs/remotes/o/b: Unable to create '/r/.git/packed-refs.lock': File exists.\n\nAnother git process seems to be running in this repository, or the lock file may be stale\nerror: could not remove reference refs/remotes/o/b\n", failure.LockContention},
	}
	for _, tc := range cases {
		if e := Classify(tc.code, []byte(tc.stderr)); e == nil || e.Class != tc.want {
			t.Errorf("%s: %+v, want %s", tc.name, e, tc.want)
		}
	}
}
