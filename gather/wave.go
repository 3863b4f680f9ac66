package gather

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/refretry/refretry/failure"
	"github.com/refretry/refretry/internal/replay"
)

// staleAge is the age past which a gatherer notes a staged commit: a job that staged
// long ago and whose commit nobody gathered since (all jobs gone, an outage).
const staleAge = time.Hour

// gather runs one wave with the lease held at value: it takes the oldest staged
// commits (at most MaxPerWave), replays them onto the branch, and pushes the branch,
// the staged refs' deletions (and conflicts' moves) and the lease's deletion in one
// atomic push. A failed push changes nothing; the caller looks again.
func (u *run) gather(ctx context.Context, st state, value string) error {
	w := &wave{ids: u.pick(st)}
	if err := u.fetchWave(ctx, w); err != nil {
		return nil // the next look decides; the lease is still ours
	}
	u.replayWave(ctx, w)
	if ok, perr := u.pushRefs(ctx, u.waveSpecs(w, value)); !ok {
		return u.refused(w, perr)
	}
	if len(w.landed) > 0 {
		u.res.Waves++
		u.res.Gathered += len(w.landed)
		u.notify("gathered %d staged commits onto %s as %s (%d left to their jobs)", len(w.landed), u.n.branch, replay.Short(w.tip), len(w.conflicts))
	}
	return nil
}

// wave is one gather's work: the staged commits it takes, and what replaying them
// onto the branch made of them.
type wave struct {
	ids       []string // the staged commits' ids, oldest first
	commits   []string // the staged commits, in the order of ids
	head      string   // the branch's value on the remote
	tip       string   // the branch's value once the commits are replayed
	landed    []string // ids whose changes are on tip
	conflicts []string // ids that could not be replayed, left to their jobs
}

// pick takes the oldest staged commits, at most perWave, noting those staged long ago.
func (u *run) pick(st state) []string {
	ids := st.order()
	if len(ids) > u.perWave {
		ids = ids[:u.perWave]
	}
	for _, id := range ids {
		if at := stagedAt(id); !at.IsZero() && time.Since(at) > staleAge {
			u.notify("%s has been staged for %v; it lands with this gather", u.n.staged(id), time.Since(at).Round(time.Minute))
		}
	}
	return ids
}

// fetchWave fetches the branch and the wave's staged commits, and sets w's head and
// commits.
func (u *run) fetchWave(ctx context.Context, w *wave) error {
	refs := []string{u.n.head()}
	for _, id := range w.ids {
		refs = append(refs, u.n.staged(id))
	}
	// Each staged commit's parent must come along: its changes are taken against it.
	// A shallow clone asks for two commits of each (the negotiation would bring a
	// staged commit's whole history when its parent is older than the clone's tip);
	// a complete one needs no depth, and must not be made shallow.
	depth := 0
	if u.shallow {
		depth = 2
	}
	values, err := u.fetch(ctx, refs, depth)
	if err != nil {
		return err
	}
	w.head, w.commits = values[0], values[1:]
	return nil
}

// replayWave replays the wave's commits onto the branch, one after another, and
// sorts each into landed or conflicts.
func (u *run) replayWave(ctx context.Context, w *wave) {
	w.tip = w.head
	for i, id := range w.ids {
		c := w.commits[i]
		next, err := u.repo.Pick(ctx, c, c+"^", w.tip, replay.Keep{Committer: true, Trailer: Trailer + ": " + id})
		var ce *replay.ConflictError
		switch {
		case errors.As(err, &ce):
			u.notify("%s conflicts with %s (%v): left to its job", u.n.staged(id), u.n.branch, ce.Paths)
			w.conflicts = append(w.conflicts, id)
		case err != nil:
			u.notify("%s cannot be replayed (%v): left to its job", u.n.staged(id), err)
			w.conflicts = append(w.conflicts, id)
		case u.repo.RevParse(ctx, next+"^{tree}") == u.repo.RevParse(ctx, w.tip+"^{tree}") &&
			u.repo.RevParse(ctx, c+"^{tree}") != u.repo.RevParse(ctx, c+"^^{tree}"):
			// Its changes are on the branch already (another job's were the same):
			// landed, without a commit that changes nothing. (A commit that was empty
			// to begin with is kept: its message is its content.)
			w.landed = append(w.landed, id)
		default:
			w.tip = next
			w.landed = append(w.landed, id)
		}
	}
}

// waveSpecs are the refspecs of the wave's one atomic push, each behind a lease on
// the value this gather saw: the branch moved to tip, the staged refs deleted (a
// conflict's commit moved to its conflict ref), and the lease, held at value, deleted.
func (u *run) waveSpecs(w *wave, value string) []string {
	specs := []string{}
	if w.tip != w.head {
		specs = append(specs, "--force-with-lease="+u.n.head()+":"+w.head, w.tip+":"+u.n.head())
	}
	for i, id := range w.ids {
		specs = append(specs, "--force-with-lease="+u.n.staged(id)+":"+w.commits[i], ":"+u.n.staged(id))
		if slices.Contains(w.conflicts, id) {
			specs = append(specs, "--force-with-lease="+u.n.conflict(id)+":", w.commits[i]+":"+u.n.conflict(id))
		}
	}
	return append(specs, "--force-with-lease="+u.n.lease()+":"+value, ":"+u.n.lease())
}

// refused handles the wave's failed push: perr is why, when git said. A rule of the
// remote that declined it ends the run, unless fewer commits at a time may pass;
// anything else means someone moved something, and the caller looks again.
func (u *run) refused(w *wave, perr *failure.Error) error {
	if perr == nil || perr.Class != failure.Declined {
		return nil // someone moved something: look again
	}
	// A rule of the remote refused the gather (a cap on refs per push, say): fewer
	// refs at a time may pass.
	u.stderr().Write(u.lastPush.Stderr)
	if len(w.ids) > 1 {
		u.perWave = max(1, len(w.ids)/2)
		u.notify("the remote refused a gather of %d staged commits (%s); gathering %d at a time", len(w.ids), perr.Message, u.perWave)
		return nil
	}
	return fmt.Errorf("the remote refused the gather: %w", perr)
}
