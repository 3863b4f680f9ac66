package gather

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/refretry/refretry/failure"
	"github.com/refretry/refretry/internal/replay"
	"github.com/refretry/refretry/push"
)

// staleAge is the age past which a gatherer notes a staged commit: a job that staged
// long ago and whose commit nobody gathered since (all jobs gone, an outage).
const staleAge = time.Hour

// replayCost is what a gatherer reckons replaying one commit costs, for its first
// forecast: a merge in one merge-tree and an object in one hash-object (replay.Chain).
const replayCost = 10 * time.Millisecond

// gatherAll gathers wave after wave with the lease held at held, from what st shows,
// until nothing is staged (then it lets the lease go), the lease is no longer its
// (another gatherer took it over), or the budget ends. It returns the last state it
// saw of the remote. Each wave's push also publishes when the next one lands (an eta
// ref, forecast from this one's length), for the waiters' looks.
func (u *run) gatherAll(ctx context.Context, st state, held string) (state, error) {
	began := u.clock.Now() // when the look that chose the wave began, about
	for {
		ids := u.pick(st)
		if len(ids) == 0 || u.left() <= 0 {
			u.release(ctx, st, held)
			return st, nil
		}
		if u.waiters(ids) && !st.eta.at.After(u.clock.Now()) {
			st = u.announce(ctx, st, len(ids), held, u.lookTook)
		}
		next, err := u.gather(ctx, ids, st, held, began)
		if err != nil {
			u.release(ctx, st, held) // the others gather without this job
			return st, err
		}
		began = u.clock.Now()
		seen, err := u.look(ctx)
		if err != nil {
			u.notify("looking at the remote after a gather: %v; letting the lease go", err)
			u.release(ctx, st, next)
			return st, nil
		}
		st = seen
		switch st.lease {
		case next:
			held = next
		case held:
		default:
			return st, nil // the lease is another's now
		}
	}
}

// release lets the lease go, held at value, and removes the forecasts st shows, in one
// push; when that fails (a forecast changed), the lease alone. Through an API, a lease
// that records a wave in flight (one whose landing is not settled) stays: the job
// that takes it over reads what of that wave landed (api.go).
func (u *run) release(ctx context.Context, st state, value string) {
	if u.inflight != "" && u.inflight == value {
		u.notify("the lease stays at the wave %s, whose landing is not settled, for the next gatherer to read", replay.Short(value))
		return
	}
	ctx = context.WithoutCancel(ctx)
	specs := []string{"--force-with-lease=" + u.n.lease() + ":" + value, ":" + u.n.lease()}
	if ok, _ := u.pushRefs(ctx, append(specs, u.dropForecasts(st)...)); !ok && len(st.etaRefs) > 0 {
		u.takeLease(ctx, value, "")
	}
}

// dropForecasts are the refspecs that delete the forecasts st shows, each at its value.
func (u *run) dropForecasts(st state) []string {
	var specs []string
	for ref, oid := range st.etaRefs {
		specs = append(specs, "--force-with-lease="+ref+":"+oid, ":"+ref)
	}
	return specs
}

// gather runs one wave of the staged commits ids with the lease held at value: it
// replays them onto the branch and pushes the branch, the staged refs' deletions (and
// conflicts' moves), the lease's new value (the new tip, so that waiters see it move)
// and the forecast of the next wave in one atomic push. A failed push changes nothing:
// the caller looks again. It returns the lease's value if the push went through. st is
// the look that chose ids (it began about began): a staged ref that holds another
// commit when fetched than st shows was moved since, and the wave is left for the next
// look; the push's leases hold each staged ref at what st showed.
func (u *run) gather(ctx context.Context, ids []string, st state, value string, began time.Time) (string, error) {
	w := &wave{ids: ids}
	if err := u.fetchWave(ctx, w); err != nil {
		u.notify("fetching %d staged commits: %v", len(ids), err)
		return value, nil
	}
	for i, id := range ids {
		if w.commits[i] != st.staged[id] {
			u.notify("%s moved from %s to %s while it was fetched; looking again", u.n.staged(id), replay.Short(st.staged[id]), replay.Short(w.commits[i]))
			return value, nil
		}
	}
	if u.ep != nil {
		landed, err := u.settle(ctx, w.head)
		if err != nil {
			u.notify("reading what of the last wave landed: %v; looking again", err)
			return value, nil
		}
		w.done = landed
	}
	if err := u.replayWave(ctx, w); err != nil {
		if se := (*replay.SignError)(nil); errors.As(err, &se) {
			return value, se.Failure("nothing of the wave was pushed, and this job lets the lease go")
		}
		u.notify("replaying %d staged commits: %v", len(ids), err)
		return value, nil
	}
	if u.ep != nil {
		return u.landAPI(ctx, w, st, value, began)
	}
	next := value
	if w.tip != w.head {
		next = w.tip
	}
	specs := append(u.waveSpecs(w, value, next, true), u.forecastSpecs(st, next, began)...)
	pushBegan := u.clock.Now()
	ok, perr := u.pushRefs(ctx, specs)
	u.pushTook = u.since(pushBegan)
	if !ok {
		return value, u.refused(w, perr)
	}
	u.waveDone(w, w.tip)
	return next, nil
}

// waveDone counts a wave whose push went through, with the branch at tip.
func (u *run) waveDone(w *wave, tip string) {
	u.res.Conflicts = append(u.res.Conflicts, w.conflicts...)
	if len(w.landed) > 0 {
		u.res.Waves++
		u.res.Gathered += len(w.landed)
		u.progress()
		u.notify("gathered %d staged commits onto %s as %s (%d left to their jobs)", len(w.landed), u.n.branch, replay.Short(tip), len(w.conflicts))
	}
}

// waiters reports whether jobs may be waiting for the wave of ids: it takes a commit
// other than this job's own, and this is a job's gather, not `gather land`'s (whose
// commits' jobs, of a fan-in, have not waited).
func (u *run) waiters(ids []string) bool {
	return !u.landing && (len(ids) > 1 || len(ids) == 1 && ids[0] != u.res.ID)
}

// announce publishes a forecast for a wave of n commits about to start, when none is
// ahead (the first wave, or one whose forecast has passed), so that the waiters look
// when it lands and not before: one push, for every waiter's looks. The wave is
// reckoned as long as the last one, or, for the first, as one and a half looks (a
// fetch and a push on a remote that the staging pushes no longer load, against a look
// that may have waited for them: lookTook) and a replay of n commits: a forecast a
// little early costs a waiter one more look, one late its whole delay. It returns st
// with the new forecast.
func (u *run) announce(ctx context.Context, st state, n int, held string, lookTook time.Duration) state {
	wave := u.lastWave
	if wave == 0 {
		wave = max(lookTook*3/2, 500*time.Millisecond) + time.Duration(n)*replayCost
	}
	f := forecast{at: u.clock.Now().Add(wave), wave: wave}
	ref := u.n.eta(f)
	specs := append(u.dropForecasts(st), "--force-with-lease="+ref+":", held+":"+ref)
	if ok, _ := u.pushRefs(ctx, specs); ok {
		st.eta, st.etaRefs = f, map[string]string{ref: held}
	}
	return st
}

// forecastSpecs are the refspecs that replace st's forecasts with this wave's: the
// next wave takes what is staged when this push ends and takes as long as this one
// did, from the look that began it (began) to its push's end (as long as the last
// push took), so it lands about that long after. tip is an object the push leaves on
// the remote, for the forecast ref to hold.
func (u *run) forecastSpecs(st state, tip string, began time.Time) []string {
	end := u.clock.Now().Add(u.pushTook)
	f := forecast{wave: end.Sub(began)}
	f.at = end.Add(f.wave)
	u.lastWave = f.wave
	ref := u.n.eta(f)
	if _, ok := st.etaRefs[ref]; ok {
		return nil // the same forecast again (a clock that stood still): kept as it is
	}
	return append(u.dropForecasts(st), "--force-with-lease="+ref+":", tip+":"+ref)
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
	// Through an API: done are ids on the branch already (settle), not replayed;
	// made are the commits the replay wrote (their staged commits, read), and
	// madeIDs their ids, for the wave's commit.
	done    map[string]bool
	made    []replay.Commit
	madeIDs []string
}

// pick takes the oldest staged commits that may land, at most perWave, noting those
// staged long ago.
func (u *run) pick(st state) []string {
	ids := u.landable(st)
	if len(ids) > u.perWave {
		ids = ids[:u.perWave]
	}
	for _, id := range ids {
		if at := stagedAt(id); !at.IsZero() && u.since(at) > staleAge {
			u.notify("%s has been staged for %v; it lands with this gather", u.n.staged(id), u.since(at).Round(time.Minute))
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
// sorts each into landed or conflicts. It reads every commit it needs with one git,
// merges them with one more and writes the new commits with a third (replay.Chain;
// more where commits are signed, or the git cannot merge trees).
func (u *run) replayWave(ctx context.Context, w *wave) error {
	revs := append([]string{w.head}, w.commits...)
	for _, c := range w.commits {
		revs = append(revs, c+"^")
	}
	infos, err := u.repo.ReadCommits(ctx, revs)
	if err != nil {
		return err
	}
	n := len(w.commits)
	staged, parents := infos[1:1+n], infos[1+n:]
	chain := u.repo.Chain(ctx, w.head, infos[0].Tree)
	for i, id := range w.ids {
		if w.done[id] {
			w.landed = append(w.landed, id)
			u.notify("%s is on %s already (its wave's gatherer stopped before it cleaned up): it is not landed again", u.n.staged(id), u.n.branch)
			continue
		}
		tree, err := u.replayOne(ctx, chain, w.commits[i], staged[i], parents[i])
		switch {
		case err != nil:
			u.notify("%s is left to its job: %v", u.n.staged(id), err)
			w.conflicts = append(w.conflicts, id)
		case tree == chain.Tree() && staged[i].Tree != parents[i].Tree:
			// Its changes are on the branch already (another job's were the same):
			// landed, without a commit that changes nothing. (A commit that was empty
			// to begin with is kept: its message is its content.)
			w.landed = append(w.landed, id)
		default:
			if err := chain.Add(ctx, staged[i], tree, replay.Keep{Committer: true, Trailer: Trailer + ": " + id}); err != nil {
				return err
			}
			w.landed = append(w.landed, id)
			w.made, w.madeIDs = append(w.made, staged[i]), append(w.madeIDs, id)
		}
	}
	w.tip, err = chain.Finish(ctx)
	return err
}

// replayOne merges the changes of the staged commit c (read as info, its parent as
// parent) into the chain's tree, and returns the tree; an error that says so when they
// conflict.
func (u *run) replayOne(ctx context.Context, chain *replay.Chain, c string, info, parent replay.Commit) (string, error) {
	if info.Tree == "" || parent.Tree == "" {
		return "", fmt.Errorf("%s or its parent did not arrive", replay.Short(c))
	}
	tree, err := chain.Merge(ctx, c, c+"^")
	if ce := (*replay.ConflictError)(nil); errors.As(err, &ce) {
		return "", fmt.Errorf("it conflicts with %s in %v", u.n.branch, ce.Paths)
	}
	return tree, err
}

// waveSpecs are the refspecs of the wave's one atomic push, each behind a lease on
// the value this gather saw: the branch moved to tip (with branch; through an API the
// forge moved it), the staged refs deleted (a conflict's commit moved to its conflict
// ref), and the lease, held at value, moved to next.
func (u *run) waveSpecs(w *wave, value, next string, branch bool) []string {
	specs := []string{}
	if branch && w.tip != w.head {
		specs = append(specs, "--force-with-lease="+u.n.head()+":"+w.head, w.tip+":"+u.n.head())
	}
	for i, id := range w.ids {
		specs = append(specs, "--force-with-lease="+u.n.staged(id)+":"+w.commits[i], ":"+u.n.staged(id))
		if slices.Contains(w.conflicts, id) {
			specs = append(specs, "--force-with-lease="+u.n.conflict(id)+":", w.commits[i]+":"+u.n.conflict(id))
		}
	}
	if next != value {
		specs = append(specs, "--force-with-lease="+u.n.lease()+":"+value, next+":"+u.n.lease())
	}
	return specs
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
	if len(w.ids) > 1 && !push.SignatureRule(perr.Policy) { // a signature rule refuses fewer commits too
		u.perWave = max(1, len(w.ids)/2)
		u.notify("the remote refused a gather of %d staged commits (%s); gathering %d at a time", len(w.ids), perr.Message, u.perWave)
		return nil
	}
	return fmt.Errorf("the remote refused the gather: %w", perr)
}

// landable are the staged ids a gather of this run may land, oldest first: all of
// them without a Key; with one, those that verify (see verify) and those Accept
// names. Each one that does not is named once in the run's notes, and stays staged:
// a gatherer neither lands nor deletes what it cannot trust.
func (u *run) landable(st state) []string {
	ids := st.order()
	if u.Key == nil {
		return ids
	}
	now := u.clock.Now()
	ok := ids[:0]
	for _, id := range ids {
		if nullID(st.staged[id]) {
			continue // a look taken while the remote updated its refs: the next one tells
		}
		if slices.Contains(u.Accept, id) {
			ok = append(ok, id)
			continue
		}
		why := verify(u.Key, u.n.branch, id, st.staged[id], now, u.maxAge())
		if why == "" {
			ok = append(ok, id)
			continue
		}
		if !u.untrusted[id] {
			u.untrusted[id] = true
			u.res.Refused = append(u.res.Refused, id)
			u.notify("%s (%s) is not landed and stays staged: %s", u.n.staged(id), replay.Short(st.staged[id]), why)
		}
	}
	return ok
}
