//go:build linux

package transaction

import (
	"context"
	"io"
	"slices"
	"testing"

	"github.com/refretry/refretry/internal/group"
	"github.com/refretry/refretry/internal/harness/testutil"
	"github.com/refretry/refretry/internal/platform"
	"github.com/refretry/refretry/retry"
	"github.com/refretry/refretry/settings"
)

// TestRunnerGroup: a library Runner with Group gets what refretry does: while another
// process holds its repository's line, its one-ref updates queue there, and the one
// the line is handed to commits them all; a Runner without Group never queues. Each
// Result names its update, one attempt and the ref store's format.
func TestRunnerGroup(t *testing.T) {
	t.Parallel()
	r := testutil.NewRepo(t, testutil.NewGit(t), "reftable")
	rv, ok := group.Name(r.GitDir)
	if !ok {
		t.Fatal("no rendezvous name")
	}
	l, err := platform.Listen(rv)
	if err != nil {
		t.Fatal(err)
	}
	alone := &Runner{Config: settings.Config{Git: r.Git.Path, Dirs: []string{r.Dir}, Env: r.Env}}
	if res, err := alone.Run(context.Background(), []string{"refs/heads/alone", r.Commit}, nil, io.Discard, io.Discard); err != nil || res.ExitCode != 0 {
		t.Fatalf("without Group, while the line is held: exit %d, %v", res.ExitCode, err)
	}
	if n := testutil.Queued(rv); n != 0 {
		t.Fatalf("without Group: %d queued", n)
	}

	type outcome struct {
		res      Result
		err      error
		attempts []retry.Attempt
	}
	refs := []string{"refs/heads/a", "refs/heads/b"}
	done := make(chan outcome, len(refs))
	for _, ref := range refs {
		go func() {
			var o outcome
			g := &Runner{
				Config: settings.Config{
					Git:       r.Git.Path,
					Dirs:      []string{r.Dir},
					Env:       r.Env,
					OnAttempt: func(a retry.Attempt) { o.attempts = append(o.attempts, a) },
				},
				Group: &Group{},
			}
			o.res, o.err = g.Run(context.Background(), []string{ref, r.Commit}, nil, io.Discard, io.Discard)
			done <- o
		}()
	}
	testutil.WaitQueued(t, rv, len(refs))
	group.HandOver(l)
	for range refs {
		o := <-done
		if o.err != nil || o.res.ExitCode != 0 || o.res.Attempts != 1 || len(o.attempts) != 1 || !o.attempts[0].Final {
			t.Errorf("with Group: %+v, %v, attempts %+v", o.res, o.err, o.attempts)
		}
		if o.res.Updates != 1 || len(o.res.Refs) != 1 || !slices.Contains(refs, o.res.Refs[0]) || o.res.Backend != "reftable" {
			t.Errorf("with Group: %+v; want one of %v, on reftable", o.res, refs)
		}
	}
	got := r.Refs("refs/heads/")
	for _, ref := range append(refs, "refs/heads/alone") {
		if got[ref] != r.Commit {
			t.Errorf("%s is %q, want %s", ref, got[ref], r.Commit)
		}
	}
}
