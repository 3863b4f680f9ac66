package push_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/refretry/refretry/failure"
	"github.com/refretry/refretry/internal/harness/testutil"
	"github.com/refretry/refretry/push"
	"github.com/refretry/refretry/retry"
)

// writingDone and resolvingDone are the last drawings of the client's "Writing
// objects" meter and of the server's "Resolving deltas", which end their lines.
var (
	writingDone   = regexp.MustCompile(`Writing objects: 100% \(\d+/\d+\), [^\r\n]*done\.\n`)
	resolvingDone = regexp.MustCompile(`remote: Resolving deltas: 100% \(\d+/\d+\), [^\r\n]*\n`)
)

// watchedStderr is a caller's stderr that calls seen, once, when what was written
// to it contains want.
type watchedStderr struct {
	mu   sync.Mutex
	b    strings.Builder
	want string
	seen func()
	once sync.Once
}

func (w *watchedStderr) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b.Write(p)
	if strings.Contains(w.b.String(), w.want) {
		w.once.Do(w.seen)
	}
	return len(p), nil
}

func (w *watchedStderr) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// waitingHook is a pre-receive hook that lets the push in once the file go exists,
// and refuses it if the file has not appeared after a minute (git's own output
// would then have been held back until the push ended).
func waitingHook(t *testing.T, s *server, goFile string) {
	t.Helper()
	hook := fmt.Sprintf(`#!/bin/sh
i=0
while [ ! -e '%s' ]; do
	i=$((i+1))
	if [ $i -gt 600 ]; then echo "no progress seen"; exit 1; fi
	sleep 0.1
done
`, goFile)
	if err := os.WriteFile(filepath.Join(s.dir, "hooks", "pre-receive"), []byte(hook), 0o755); err != nil {
		t.Fatal(err)
	}
}

// TestProgressLive: with --progress, git's progress reaches the caller's stderr
// while git runs. The server's pre-receive hook waits until the caller's stderr has
// shown the client's "Writing objects: 100%" and the server's "remote: Resolving
// deltas" meter (receive.unpackLimit=1 makes the server index the pack), so the push
// lands only if both came while the attempt was still running. After it, the table
// follows, and neither meter is written twice.
func TestProgressLive(t *testing.T) {
	t.Parallel()
	var same []combo // each git on both sides: 2.39 files, 2.55 files, 2.55 reftable
	for _, cb := range allCombos(t) {
		if cb.client.Path == cb.server.Path {
			same = append(same, cb)
		}
	}
	// By default 2.39 files and 2.55 reftable: each git and each backend.
	for _, cb := range testutil.Cells(t, same, 0, 2) {
		t.Run(cb.name(), func(t *testing.T) {
			t.Parallel()
			s := newServer(t, cb.server, cb.backend)
			s.run(s.dir, "config", "receive.unpackLimit", "1")
			// No maintenance detached after the push: it would write packs here while
			// the test's directory is being removed.
			s.run(s.dir, "config", "receive.autogc", "false")
			c := newClient(t, cb.client, s)
			c.commit("a", strings.Repeat("a line of text\n", 200))
			c.run("push", "-q", "origin", "main")
			head := c.commit("a", strings.Repeat("a line of text\n", 200)+"one more\n")
			goFile := filepath.Join(t.TempDir(), "go")
			waitingHook(t, s, goFile)
			stderr := &watchedStderr{want: "Writing objects: 100%", seen: func() {}}
			stderr.seen = func() {
				go func() { // the meters come from two processes: wait for the server's too
					for !strings.Contains(stderr.String(), "remote: Resolving deltas: 100%") {
						time.Sleep(10 * time.Millisecond)
					}
					if err := os.WriteFile(goFile, nil, 0o644); err != nil {
						t.Error(err)
					}
				}()
			}
			p, _ := c.pusher(smallPolicy(1), nil)
			res, err := p.Run(context.Background(), []string{"--progress", "origin", "main"}, nil, &strings.Builder{}, stderr)
			got := stderr.String()
			if res.ExitCode != 0 || err != nil {
				t.Fatalf("exit %d, err %v: the progress did not come while git ran\nstderr:\n%q", res.ExitCode, err, got)
			}
			if s.ref("refs/heads/main") != head {
				t.Errorf("server main is not %s", head)
			}
			for _, final := range []*regexp.Regexp{writingDone, resolvingDone, regexp.MustCompile(`(?m)^Total \d+ `)} {
				if n := len(final.FindAllString(got, -1)); n != 1 {
					t.Errorf("%s written %d times, want once:\n%q", final, n, got)
				}
			}
			if i, j := strings.LastIndex(got, "Writing objects"), strings.Index(got, "To file://"); j < i || j < 0 {
				t.Errorf("the table is not after the progress:\n%q", got)
			}
		})
	}
}

// TestProgressAsked: Runner.Progress gives git --progress, as git push's own
// default does at a terminal, unless the caller's arguments decide (-q, --quiet,
// --no-progress, or --progress itself); a caller's --progress shows it without.
func TestProgressAsked(t *testing.T) {
	t.Parallel()
	cur := allCombos(t)[4] // 2.55 on both sides, files
	cases := []struct {
		progress bool
		args     []string
		want     bool
	}{
		{true, []string{"origin", "main"}, true},
		{true, []string{"-q", "origin", "main"}, false},
		{true, []string{"origin", "main", "--quiet"}, false},
		{true, []string{"--no-progress", "origin", "main"}, false},
		{true, []string{"--progress", "--no-progress", "origin", "main"}, false},
		{true, []string{"-q", "--progress", "origin", "main"}, true},
		{false, []string{"origin", "main"}, false},
		{false, []string{"--progress", "origin", "main"}, true},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%v/%s", tc.progress, strings.Join(tc.args, " ")), func(t *testing.T) {
			t.Parallel()
			s := newServer(t, cur.server, cur.backend)
			c := newClient(t, cur.client, s)
			c.commit("a", "a")
			r := c.push(smallPolicy(1), func(p *push.Runner) { p.Progress = tc.progress }, tc.args...)
			if r.code != 0 || r.err != nil {
				t.Fatalf("exit %d, err %v\n%s", r.code, r.err, r.stderr)
			}
			if got := strings.Contains(r.stderr, "Writing objects: 100%"); got != tc.want {
				t.Errorf("progress shown %v, want %v:\n%q", got, tc.want, r.stderr)
			}
		})
	}
}

// TestProgressEveryAttempt: the progress of an attempt that is retried is shown too,
// as it came: a push that met the server's lock once shows two meters, then the
// final attempt's table once.
func TestProgressEveryAttempt(t *testing.T) {
	t.Parallel()
	cur := allCombos(t)[4]
	s := newServer(t, cur.server, cur.backend)
	c := newClient(t, cur.client, s)
	c.commit("a", "a")
	c.run("push", "-q", "origin", "main")
	c.commit("b", "b")
	release := s.hold(s.lockPath("refs/heads/main"))
	defer release()
	r := c.push(smallPolicy(5), func(p *push.Runner) {
		record := p.OnAttempt
		p.OnAttempt = func(a retry.Attempt) { record(a); release() }
	}, "--progress", "origin", "main")
	if r.code != 0 || r.err != nil {
		t.Fatalf("exit %d, err %v\n%s", r.code, r.err, r.stderr)
	}
	if got := r.classes(); len(got) != 2 || got[0] != failure.LockContention {
		t.Fatalf("attempts %v, want lock contention then ok", got)
	}
	if n := len(writingDone.FindAllString(r.stderr, -1)); n != 2 {
		t.Errorf("%d meters, want one per attempt:\n%q", n, r.stderr)
	}
	if n := strings.Count(r.stderr, "To file://"); n != 1 {
		t.Errorf("%d tables, want the final attempt's:\n%q", n, r.stderr)
	}
}
