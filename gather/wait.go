package gather

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/refretry/refretry/internal/replay"
)

// A waiter's looks at the remote. Every look is a request that every waiting job
// makes, so a waiter looks when its commit may have landed, not at a fixed pace: its
// first look comes half as long after its staging push as that push took, at most
// pollCap (the gatherer, which took the lease in its own staging push, is by then
// well into a wave, whose forecast that look reads); after that it looks when the
// gatherer's forecast (an eta ref) says the wave that takes its commit lands. Without
// a forecast it falls back on a pace that keeps all waiters together to at most
// lookRate looks a second, and to about one look in flight (a look costs the remote
// what it took).
const (
	pollMin    = 100 * time.Millisecond // no two looks closer than this
	waveCost   = 300 * time.Millisecond // without a forecast: a wave's fixed cost
	commitCost = 20 * time.Millisecond  // and its cost per commit ahead
	lookRate   = 48                     // looks a second, all waiters together
	pollCap    = 5 * time.Second        // no wait without a forecast longer than this
	busyCap    = 15 * time.Second       // nor, when the looks themselves are slow, than this
	pollErr    = time.Second            // after a look that failed
)

// waiting is what a waiter has seen of the remote so far.
type waiting struct {
	leaseSeen  string    // the lease value last seen
	leaseSince time.Time // since when it has been seen unchanged (or free)
	moved      string    // another commit the last look saw at the job's staged ref
	patience   time.Duration
	last       state     // the last look, for progress (observe)
	looked     bool      // last is a look
	lateAt     time.Time // the forecast the last looks found passed
	late       int       // how many looks in a row found it so
}

// lateFor counts the looks in a row that found the forecast f passed at now.
func (w *waiting) lateFor(f forecast, now time.Time) int {
	switch {
	case f.at.IsZero() || f.at.After(now):
		w.lateAt, w.late = time.Time{}, 0
	case f.at.Equal(w.lateAt):
		w.late++
	default:
		w.lateAt, w.late = f.at, 0
	}
	return w.late
}

// wait watches the remote until the staged commit is gathered, gathering when this
// job holds the lease: taken in its staging push, or on a look when the lease is free
// (the oldest staged job takes it at once, the others only after it has stayed free
// for a while), or when it has not changed for the job's patience: LeaseTimeout at
// first, doubled after each take-over it makes (a take-over ends the holder's wave;
// the doubling lets the patience outgrow a long wave).
func (u *run) wait(ctx context.Context, staging time.Duration, held bool) error {
	w := &waiting{patience: u.leaseTimeout()}
	delay := min(max(staging/2, pollMin), pollCap)
	if held {
		delay = 0 // it gathers: its first look starts the first wave
	}
	return u.poll(ctx, delay, func(st state, took time.Duration) (time.Duration, bool, error) {
		u.observe(w, st)
		return u.step(ctx, w, st, took)
	}, func(reason string) error { return u.notLanded(ctx, reason) })
}

// poll is the one loop that waits on the remote, on the run's clock: after delay it
// looks, and step, given the look and how long it took, says how long until the next
// look, or that the loop is done (with its error); a failed look is tried again after
// pollErr. When the budget or ctx ends first, the loop ends with ended's error.
func (u *run) poll(ctx context.Context, delay time.Duration, step func(st state, took time.Duration) (time.Duration, bool, error),
	ended func(reason string) error) error {
	var lastErr error
	for {
		if reason := u.pause(ctx, delay, lastErr); reason != "" {
			return ended(reason)
		}
		begin := u.clock.Now()
		st, err := u.look(ctx)
		if lastErr = err; err != nil {
			delay = pollErr
			continue
		}
		next, done, err := step(st, u.since(begin))
		if done || err != nil {
			return err
		}
		delay = next
	}
}

// step acts on one look, st, that took took: the job's commit gone from the staged
// refs ends the wait (done, with its outcome); a lease this job may hold is taken
// and gathered with. It returns when to look next.
func (u *run) step(ctx context.Context, w *waiting, st state, took time.Duration) (next time.Duration, done bool, err error) {
	id, mine := u.res.ID, u.res.Staged
	if c, ok := st.staged[id]; !ok {
		return 0, true, u.outcome(ctx, st)
	} else if c != mine {
		// Moved by someone else, once two looks in a row agree (a look taken while
		// the remote updates its refs has shown a null id).
		if c == w.moved && !nullID(c) {
			return 0, true, &MovedError{Ref: u.n.staged(id), Commit: mine, Now: c}
		}
		w.moved = c
		return pollMin, false, nil
	}
	w.moved = ""
	if st.lease != w.leaseSeen || w.leaseSince.IsZero() {
		w.leaseSeen, w.leaseSince = st.lease, u.clock.Now()
	}
	if !u.mayHold(ctx, w, st, took) {
		return u.jitter(u.nextLook(st, id, took, w.lateFor(st.eta, u.clock.Now()))), false, nil
	}
	st, err = u.gatherAll(ctx, st, mine)
	if err != nil {
		return 0, true, err
	}
	if _, ok := st.staged[id]; !ok {
		return 0, true, u.outcome(ctx, st)
	}
	// What was seen before this job held the lease says nothing about the lease now:
	// a value seen again (another job's commit, taken back) starts a new wait.
	w.leaseSeen, w.leaseSince = "", time.Time{}
	return 0, false, nil
}

// mayHold reports whether this job holds the lease after the look st (that took
// took), taking it when that is its turn: its own value (taken in its staging push,
// or in an attempt whose answer was lost); a free lease, at once for the oldest job
// staged and after rank × 2 looks for the others (so that one job takes it, not all,
// unless the oldest has gone); a lease unchanged for the job's patience.
func (u *run) mayHold(ctx context.Context, w *waiting, st state, took time.Duration) bool {
	mine := u.res.Staged
	switch {
	case st.lease == mine:
		return true
	case st.lease == "":
		rank := slices.Index(u.landable(st), u.res.ID)
		if rank > 0 && u.since(w.leaseSince) < time.Duration(rank)*max(2*took, 2*pollMin) {
			return false
		}
		return u.takeLease(ctx, "", mine)
	case u.since(w.leaseSince) > w.patience:
		u.notify("the gather lease %s has not changed for %v: taking it over", replay.Short(st.lease), w.patience)
		w.patience *= 2
		return u.takeOver(ctx, st.lease, mine)
	}
	return false
}

// nextLook is how long a waiter lets pass after a look that saw st and took took,
// before jitter: until the gatherer's forecast says the wave that takes its commit
// lands (the one forecast, when the commit was staged by the time that wave was
// taken; else the one after), and a look's time later, for the push to finish
// everywhere; past a forecast (the gatherer is late), a quarter of a wave, doubled for
// each look late already (late); without any forecast, about the time a gather takes
// to reach its
// commit (each wave takes the oldest first), never so soon that all waiting jobs
// together look more than lookRate times a second, and, on a remote that slows under
// load, with about one look of all waiters in flight: each waits len(st.staged) times
// its last look, up to busyCap.
func (u *run) nextLook(st state, id string, took time.Duration, late int) time.Duration {
	now := u.clock.Now()
	if f := st.eta; f.at.After(now) {
		at := f.at
		if staged := stagedAt(id); !staged.IsZero() && staged.After(f.at.Add(-f.wave)) {
			at = at.Add(f.wave) // staged after that wave was taken: the next one
		}
		return min(max(at.Sub(now)+took, pollMin), busyCap)
	} else if !f.at.IsZero() {
		// The gatherer is late on its forecast: a look a quarter wave later, doubled
		// for each look that found it late already (a gatherer late because the looks
		// load its remote must not be buried in them), within lookRate.
		d := min((f.wave/4)<<min(late, 6), busyCap)
		return max(d, pollMin, time.Duration(len(st.staged))*time.Second/lookRate)
	}
	ahead := slices.Index(st.order(), id) + 1
	d := max(waveCost+time.Duration(ahead)*commitCost, time.Duration(len(st.staged))*time.Second/lookRate)
	d = min(max(d, pollMin), pollCap)
	return max(d, min(time.Duration(len(st.staged))*took, busyCap))
}

// The budget. A job's budget (its policy's Timeout) counts the time in which the
// remote did not move when the settings say so (settings.Settings.Progressive: the
// default, with a ceiling of settings.DefaultCeiling): each look that shows the branch
// moved, or staged commits gone, starts it again, and the ceiling is the hard limit.
// A user's own --timeout is a plain deadline.

// observe notes progress between the last look and st: the branch moved, or staged
// commits left (landed, conflicted or discarded).
func (u *run) observe(w *waiting, st state) {
	if w.looked && (st.head != w.last.head || gone(w.last, st) || working(w.last, st)) {
		u.progress()
	}
	w.last, w.looked = st, true
}

// gone reports whether a commit staged in before is no longer staged in after.
func gone(before, after state) bool {
	for id := range before.staged {
		if _, ok := after.staged[id]; !ok {
			return true
		}
	}
	return false
}

// working reports whether a gatherer showed between the looks before and after
// that it is at work: the lease changed hands or moved to its next wave, or a new
// forecast was published (the announce before a first wave, which may take a slow
// remote longer than a budget to land).
func working(before, after state) bool {
	return after.lease != before.lease || after.eta.at.After(before.eta.at)
}

// progress starts the budget again, when it counts the time without progress.
func (u *run) progress() {
	if u.progressive {
		u.moved = u.clock.Now()
	}
}

// left is what the budget has left.
func (u *run) left() time.Duration {
	if u.policy.Timeout <= 0 {
		return time.Hour
	}
	left := u.policy.Timeout - u.since(u.moved)
	if u.progressive {
		left = min(left, u.ceiling-u.since(u.start))
	}
	return left
}

// ended says which rule ended the budget.
func (u *run) ended() string {
	switch {
	case !u.progressive:
		return "the budget ended"
	case u.since(u.start) >= u.ceiling:
		return fmt.Sprintf("its %v ceiling ended", u.ceiling)
	}
	return fmt.Sprintf("no wave landed and the branch did not move for %v", u.policy.Timeout)
}

// pause waits d, and says why the run must end instead: the budget ended, or ctx's.
func (u *run) pause(ctx context.Context, d time.Duration, lastErr error) string {
	if d > 0 && u.left() > 0 {
		if err := u.clock.Sleep(ctx, min(d, u.left())); err != nil {
			return err.Error()
		}
	}
	if u.left() > 0 {
		return ""
	}
	reason := u.ended()
	if lastErr != nil {
		reason += "; last look at the remote: " + lastErr.Error()
	}
	return reason
}

// notLanded ends a run whose commit has not landed, after one last look: a gather
// may have taken the commit since. A lease taken and not used is let go.
func (u *run) notLanded(ctx context.Context, reason string) error {
	ctx = context.WithoutCancel(ctx)
	id, mine := u.res.ID, u.res.Staged
	st, err := u.look(ctx)
	if err == nil {
		if st.lease == mine {
			u.takeLease(ctx, mine, "")
		}
		if _, ok := st.staged[id]; !ok {
			return u.outcome(ctx, st)
		}
	}
	return &NotLandedError{Ref: u.n.staged(id), Commit: mine, Elapsed: u.since(u.start), Reason: reason}
}

// outcome is what became of the job's staged commit, gone from the staged refs.
func (u *run) outcome(ctx context.Context, st state) error {
	id := u.res.ID
	if c, ok := st.conflict[id]; ok {
		return u.conflicted(ctx, c)
	}
	if c, ok := st.discarded[id]; ok {
		u.pushRefs(ctx, []string{"--force-with-lease=" + u.n.discarded(id) + ":" + c, ":" + u.n.discarded(id)})
		return &DiscardedError{Ref: u.n.staged(id), Commit: c}
	}
	u.res.Landed = true
	if u.res.Gathered == 0 {
		u.notify("%s landed on %s, gathered by another job", replay.Short(u.res.Staged), u.n.branch)
	}
	return nil
}

// conflicted reports the job's own conflict: it replays its commit onto the branch
// to name the paths, and removes the conflict ref (the commit stays in the job's
// repository).
func (u *run) conflicted(ctx context.Context, commit string) error {
	e := &ConflictError{Commit: commit, Ref: u.n.conflict(u.res.ID), Push: u.t.plainPush()}
	if tips, err := u.fetch(ctx, []string{u.n.head()}, 2); err == nil {
		e.Onto = tips[0]
		var ce *replay.ConflictError
		if _, err := u.repo.Pick(ctx, commit, commit+"^", e.Onto, replay.Keep{}); errors.As(err, &ce) {
			e.Paths = ce.Paths
		}
	}
	u.pushRefs(ctx, []string{"--force-with-lease=" + e.Ref + ":" + commit, ":" + e.Ref})
	return e
}
