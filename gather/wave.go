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
	ids := st.order()
	if len(ids) > u.perWave {
		ids = ids[:u.perWave]
	}
	refs := []string{u.n.head()}
	for _, id := range ids {
		refs = append(refs, u.n.staged(id))
		if at := stagedAt(id); !at.IsZero() && time.Since(at) > staleAge {
			u.notify("%s has been staged for %v; it lands with this gather", u.n.staged(id), time.Since(at).Round(time.Minute))
		}
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
		return nil // the next look decides; the lease is still ours
	}
	head, commits := values[0], values[1:]
	tip := head
	var landed, conflicts []string
	for i, id := range ids {
		next, err := u.repo.Pick(ctx, commits[i], commits[i]+"^", tip, replay.Keep{Committer: true, Trailer: Trailer + ": " + id})
		var ce *replay.ConflictError
		switch {
		case errors.As(err, &ce):
			u.notify("%s conflicts with %s (%v): left to its job", u.n.staged(id), u.n.branch, ce.Paths)
			conflicts = append(conflicts, id)
		case err != nil:
			u.notify("%s cannot be replayed (%v): left to its job", u.n.staged(id), err)
			conflicts = append(conflicts, id)
		case u.repo.RevParse(ctx, next+"^{tree}") == u.repo.RevParse(ctx, tip+"^{tree}") &&
			u.repo.RevParse(ctx, commits[i]+"^{tree}") != u.repo.RevParse(ctx, commits[i]+"^^{tree}"):
			// Its changes are on the branch already (another job's were the same):
			// landed, without a commit that changes nothing. (A commit that was empty
			// to begin with is kept: its message is its content.)
			landed = append(landed, id)
		default:
			tip = next
			landed = append(landed, id)
		}
	}
	specs := []string{}
	if tip != head {
		specs = append(specs, "--force-with-lease="+u.n.head()+":"+head, tip+":"+u.n.head())
	}
	for i, id := range ids {
		specs = append(specs, "--force-with-lease="+u.n.staged(id)+":"+commits[i], ":"+u.n.staged(id))
		if slices.Contains(conflicts, id) {
			specs = append(specs, "--force-with-lease="+u.n.conflict(id)+":", commits[i]+":"+u.n.conflict(id))
		}
	}
	specs = append(specs, "--force-with-lease="+u.n.lease()+":"+value, ":"+u.n.lease())
	ok, perr := u.pushRefs(ctx, specs)
	if !ok {
		if perr != nil && perr.Class == failure.Declined {
			// A rule of the remote refused the gather (a cap on refs per push, say):
			// fewer refs at a time may pass.
			u.stderr().Write(u.lastPush.Stderr)
			if len(ids) > 1 {
				u.perWave = max(1, len(ids)/2)
				u.notify("the remote refused a gather of %d staged commits (%s); gathering %d at a time", len(ids), perr.Message, u.perWave)
				return nil
			}
			return fmt.Errorf("the remote refused the gather: %w", perr)
		}
		return nil // someone moved something: look again
	}
	if len(landed) > 0 {
		u.res.Waves++
		u.res.Gathered += len(landed)
		u.notify("gathered %d staged commits onto %s as %s (%d left to their jobs)", len(landed), u.n.branch, replay.Short(tip), len(conflicts))
	}
	return nil
}
