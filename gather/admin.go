package gather

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/refretry/refretry/internal/replay"
)

// Entry is one of a branch's gather refs on the remote.
type Entry struct {
	ID     string
	Ref    string
	Commit string
	// State is "staged", "unverified" (staged, but with a Key it does not verify, so
	// no gatherer lands it: Problem says why), "conflict" (a gather could not replay
	// it) or "discarded".
	State   string
	Problem string
	At      time.Time // when it was staged (from its id); zero when the id is not a UUIDv7
}

// Listing is what the remote holds of a branch's gathering.
type Listing struct {
	Head    string  // the branch's value
	Lease   string  // the lease's value, "" when no gather holds it
	Entries []Entry // oldest first
}

// List reads the staged, conflicting and discarded commits of branch ("main" or
// "refs/heads/main") and its lease from remote (a name or a URL, as git push takes
// it), with one ls-remote.
func (r *Runner) List(ctx context.Context, remote, branch string) (Listing, error) {
	u, err := r.newRun(ctx, target{remote: remote, branch: branch}, nil)
	if err != nil {
		return Listing{}, err
	}
	st, err := u.look(ctx)
	if err != nil {
		return Listing{}, err
	}
	l := Listing{Head: st.head, Lease: st.lease}
	add := func(state string, refs map[string]string, ref func(string) string) {
		for id, c := range refs {
			l.Entries = append(l.Entries, Entry{ID: id, Ref: ref(id), Commit: c, State: state, At: stagedAt(id)})
		}
	}
	add("staged", st.staged, u.n.staged)
	if u.Key != nil {
		now := u.clock.Now()
		for i, e := range l.Entries {
			if why := verify(u.Key, u.n.branch, e.ID, e.Commit, now, u.maxAge()); why != "" {
				l.Entries[i].State, l.Entries[i].Problem = "unverified", why
			}
		}
	}
	add("conflict", st.conflict, u.n.conflict)
	add("discarded", st.discarded, u.n.discarded)
	slices.SortFunc(l.Entries, func(a, b Entry) int { return strings.Compare(a.ID, b.ID) })
	return l, nil
}

// Land gathers what is staged for branch on remote (as List takes them) without a
// commit of its own, as a fan-in job or an operator after an outage does: it takes
// the lease (waiting for a gather in progress, and taking over a lease that has not
// changed for LeaseTimeout), gathers wave after wave until nothing that may land is
// staged, and returns how many commits it landed. With a Key, what does not verify
// stays staged (Result.Refused), unless Accept names it.
// Commits that conflict are left in the conflict namespace. git's output reaches
// stderr (nil discards it) only when a push fails for good.
func (r *Runner) Land(ctx context.Context, remote, branch string, stderr io.Writer) (Result, error) {
	u, err := r.newRun(ctx, target{remote: remote, branch: branch}, stderr)
	if err == nil {
		err = u.replaying(ctx) // a policy that cannot work, a git that cannot replay
	}
	if err != nil {
		return u.res, err
	}
	u.landing = true
	defer u.cleanup()
	marker, err := u.leaseMarker(ctx)
	if err != nil {
		return u.res, err
	}
	var leaseSeen string
	var leaseSince time.Time
	err = u.poll(ctx, 0, func(st state, _ time.Duration) (time.Duration, bool, error) {
		if len(u.landable(st)) == 0 { // what does not verify stays staged
			if st.lease == marker {
				u.takeLease(ctx, marker, "") // nothing left: let it go
			}
			return 0, true, u.leftConflicts()
		}
		if st.lease != leaseSeen || leaseSince.IsZero() {
			leaseSeen, leaseSince = st.lease, u.clock.Now()
		}
		if !u.landerHolds(ctx, st, leaseSince, marker) {
			return u.jitter(pollCap / 2), false, nil
		}
		_, err := u.gatherAll(ctx, st, marker)
		return 0, err != nil, err
	}, func(reason string) error {
		return fmt.Errorf("staged commits are left after %v: %s", u.since(u.start).Round(time.Millisecond), reason)
	})
	return u.res, err
}

// leftConflicts is Land's error for the staged commits its gathers moved to the
// conflict namespace, nil when none.
func (u *run) leftConflicts() error {
	if len(u.res.Conflicts) == 0 {
		return nil
	}
	e := &LeftError{Branch: u.n.branch}
	for _, id := range u.res.Conflicts {
		e.Refs = append(e.Refs, u.n.conflict(id))
	}
	return e
}

// landerHolds reports whether Land holds the lease at marker, taking it when it is
// free or has not changed since leaseSince for LeaseTimeout.
func (u *run) landerHolds(ctx context.Context, st state, leaseSince time.Time, marker string) bool {
	switch {
	case st.lease == marker:
		return true
	case st.lease == "":
		return u.takeLease(ctx, "", marker)
	case u.since(leaseSince) > u.leaseTimeout():
		u.notify("the gather lease %s has not changed for %v: taking it over", replay.Short(st.lease), u.leaseTimeout())
		return u.takeOver(ctx, st.lease, marker)
	}
	return false
}

// leaseMarker makes the value Land holds the lease at. It must be an object the
// remote has or is sent: a commit of refretry's own, with an empty tree, unique to
// this run, so that no job mistakes the lease for its.
func (u *run) leaseMarker(ctx context.Context) (string, error) {
	id, err := newID()
	if err != nil {
		return "", err
	}
	empty, err := u.repo.Output(ctx, "mktree")
	if err != nil {
		return "", err
	}
	info := replay.Commit{Message: []byte("refretry gather land " + id + "\n"),
		Author: replay.Ident{Name: "refretry", Email: "refretry@localhost"}}
	info.Committer = info.Author
	return u.repo.CommitTree(ctx, info, empty, "", false)
}

// Discard removes staged commits of branch (by id) from remote (as List takes them)
// in one atomic push, marking each discarded so that its job, if it is still waiting,
// fails instead of waiting on; it removes conflict and discarded marks of those ids
// too. An id the remote does not have is an error, and nothing is removed. git's
// output reaches stderr (nil discards it) when the push fails.
func (r *Runner) Discard(ctx context.Context, remote, branch string, ids []string, stderr io.Writer) error {
	u, err := r.newRun(ctx, target{remote: remote, branch: branch}, stderr)
	if err != nil {
		return err
	}
	st, err := u.look(ctx)
	if err != nil {
		return err
	}
	var specs []string
	for _, id := range ids {
		found := false
		if c, ok := st.staged[id]; ok {
			specs = append(specs, "--force-with-lease="+u.n.staged(id)+":"+c, ":"+u.n.staged(id),
				"--force-with-lease="+u.n.discarded(id)+":", c+":"+u.n.discarded(id))
			found = true
		}
		for ref, refs := range map[string]map[string]string{u.n.conflict(id): st.conflict, u.n.discarded(id): st.discarded} {
			if c, ok := refs[id]; ok {
				specs = append(specs, "--force-with-lease="+ref+":"+c, ":"+ref)
				found = true
			}
		}
		if !found {
			return fmt.Errorf("%s: nothing of that id is staged for %s", id, u.n.head())
		}
	}
	if ok, perr := u.pushRefs(ctx, specs); !ok {
		u.stderr().Write(u.lastPush.Stderr)
		return fmt.Errorf("discarding: %w", perr)
	}
	return nil
}
