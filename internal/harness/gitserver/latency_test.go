package gitserver_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/refretry/refretry/internal/harness/gitserver"
	"github.com/refretry/refretry/internal/harness/latency"
	"github.com/refretry/refretry/internal/harness/testutil"
)

// TestLatency: with a round trip set, every request a real git makes (a fetch's and a
// push's) spends half of it before the server acts and half before its answer, in that
// order; the push's POST reaches receive-pack only after its way there; what git does
// is unchanged.
func TestLatency(t *testing.T) {
	t.Parallel()
	cur := testutil.NewGit(t)
	var mu sync.Mutex
	var seen []string
	note := func(s string) { mu.Lock(); seen = append(seen, s); mu.Unlock() }
	opts := gitserver.Options{
		Latency:           latency.Delay{RoundTrip: 100 * time.Millisecond, Sleep: func(d time.Duration) { note("sleep " + d.String()) }},
		BeforeReceivePack: func(n int) { note(fmt.Sprintf("receive-pack %d", n)) },
	}
	r := newRaced(t, combo{cur, cur, "files"}, opts, nil)
	r.w.run("fetch", "-q", "origin")
	if p := r.w.push("origin", "main"); p.code != 0 || r.rem.ref("refs/heads/main") != r.c {
		t.Fatalf("push through the delayed server: exit %d, server's main %s, want %s\n%s", p.code, r.rem.ref("refs/heads/main"), r.c, p.stderr)
	}
	there, back := "sleep 50ms", "sleep 50ms"
	// The fetch: info/refs and ls-refs. The push: info/refs and its POST.
	want := []string{there, back, there, back, there, back, there, "receive-pack 1", back}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(seen, want) {
		t.Errorf("saw\n%q\nwant\n%q", seen, want)
	}
	if n := r.srv.Requests(); 2*n != len(seen)-1 {
		t.Errorf("%d requests and %d sleeps, want two sleeps a request", n, len(seen)-1)
	}
}
