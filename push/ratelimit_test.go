package push_test

import (
	"github.com/refretry/refretry/failure"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/refretry/refretry/internal/harness/gitserver"
	"github.com/refretry/refretry/internal/harness/testutil"
	"github.com/refretry/refretry/push"
)

// TestRateLimit: a server answering 429 with Retry-After. git 2.55 waits as asked within
// the attempt; when the server keeps refusing past git's own retries, refretry's next
// attempt starts no sooner than the server asked. git 2.39 knows no Retry-After.
func TestRateLimit(t *testing.T) {
	t.Parallel()
	cur, old := testutil.NewGit(t), testutil.SystemGit(t)
	cases := []struct {
		name       string
		g          testutil.Git
		failFirst  int
		retryAfter string
		want       []failure.Class
		minWall    time.Duration
		minDelay   time.Duration
	}{
		{"2.55, one 429 with Retry-After 2", cur, 1, "2", []failure.Class{"ok"}, 2 * time.Second, 0},
		{"2.55, three 429s with Retry-After 1", cur, 3, "1", []failure.Class{failure.Transport, "ok"}, 3 * time.Second, time.Second},
		{"2.39, one 429", old, 1, "2", []failure.Class{failure.Transport, "ok"}, 0, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newServer(t, tc.g, "files")
			c := newClient(t, tc.g, s)
			commit := c.commit("f", "x\n")
			srv, err := gitserver.Start(tc.g.Path, filepath.Dir(s.dir), gitserver.Options{
				ReceivePack: true, FailStatus: 429, FailFirst: tc.failFirst, RetryAfter: tc.retryAfter})
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			start := time.Now()
			r := c.push(smallPolicy(10), func(p *push.Runner) { p.Clock = nil }, srv.URL("remote.git"), "main")
			wall := time.Since(start)
			if r.code != 0 || !slices.Equal(r.classes(), tc.want) {
				t.Fatalf("exit %d, attempts %v, want %v\n%s", r.code, r.classes(), tc.want, r.stderr)
			}
			if wall < tc.minWall {
				t.Errorf("done in %v: the server asked for %v in all", wall, tc.minWall)
			}
			if len(r.attempts) > 1 && r.attempts[0].Delay < tc.minDelay {
				t.Errorf("waited %v before attempt 2, the server asked for %v", r.attempts[0].Delay, tc.minDelay)
			}
			if got := s.ref("refs/heads/main"); got != commit {
				t.Errorf("server main = %s, want %s", got, commit)
			}
		})
	}
}
