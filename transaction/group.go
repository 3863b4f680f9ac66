//go:build unix

package transaction

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/refretry/refretry/internal/platform"
)

// maxGroup bounds how many invocations one git commits.
const maxGroup = 1000

// coalesced runs args as part of a group commit when it can: coalescing is asked for,
// the arguments are a single-ref form refretry reads with certainty, the repository
// is found in-process, and another invocation holds the line. handled is false when
// the caller should run args the usual way.
func (r *Runner) coalesced(ctx context.Context, args Args) (handled bool, code int, err error) {
	c := r.Coalesce
	if !c.On && c.Lookup == nil || len(r.GlobalArgs) > 0 {
		// git options of the caller's own (GlobalArgs) cannot be shared by a group.
		return false, 0, nil
	}
	u, opts, ok := parseCoalescable(args.Raw)
	if !ok || traced(r.Env) {
		return false, 0, nil
	}
	d, ok := r.discovered()
	if !ok {
		return false, 0, nil
	}
	stateDir := filepath.Join(d.commonDir, "refretry")
	lineDir := r.reftableDir()
	if lineDir == "" {
		// The files backend has no line of its own for a first attempt: coalescers
		// queue on the store's directory, and only when asked outright (docs).
		if !c.On || os.MkdirAll(stateDir, 0o777) != nil {
			return false, 0, nil
		}
		lineDir = stateDir
	}
	f, err := os.Open(lineDir)
	if err != nil {
		return false, 0, nil
	}
	newGrouper := func() *grouper {
		return &grouper{r: r, args: args, u: u, opts: opts, lineDir: lineDir,
			st: &store{dir: stateDir}, id: newID(), key: groupKey(opts, d, r.Git, r.Env)}
	}
	switch err := platform.Lock(f, false); {
	case err == nil && anyEntries(filepath.Join(stateDir, dirPending)) && (c.On || c.Lookup()):
		// At the head of the line, with updates waiting (they came while the line
		// changed hands): lead them.
		code, err := newGrouper().run(ctx, f, true)
		return true, code, err
	case err == nil:
		// Nobody ahead: run as usual, holding the line, so that those who come
		// meanwhile queue behind this one and are committed together after it.
		code, err := r.inLine(ctx, args, lineDir)
		f.Close()
		return true, code, err
	case !errors.Is(err, platform.ErrBusy):
		f.Close()
		return false, 0, nil
	}
	if !c.On && !c.Lookup() {
		f.Close()
		return false, 0, nil
	}
	code, err = newGrouper().run(ctx, f, false)
	return true, code, err
}

// anyEntries reports whether dir exists and is not empty.
func anyEntries(dir string) bool {
	f, err := os.Open(dir)
	if err != nil {
		return false
	}
	defer f.Close()
	names, _ := f.Readdirnames(1)
	return len(names) > 0
}

// inLine runs args the usual way while this process holds the line on lineDir.
func (r *Runner) inLine(ctx context.Context, args Args, lineDir string) (int, error) {
	r.lineHeld = lineDir
	defer func() { r.lineHeld = "" }()
	return r.single(ctx, args)
}

// grouper is one coalescing invocation.
type grouper struct {
	r       *Runner
	args    Args
	u       groupUpdate
	opts    groupOptions
	key     string
	id      string
	st      *store
	lineDir string
}

// run publishes the update, waits in line (unless it holds it already), and then
// either reports the outcome a leader recorded for it or leads a group itself. f is
// the line's directory, open.
func (g *grouper) run(ctx context.Context, f *os.File, held bool) (int, error) {
	r := g.r
	bail := func() (int, error) {
		if held {
			defer f.Close()
			return r.inLine(ctx, g.args, g.lineDir)
		}
		f.Close()
		return r.single(ctx, g.args)
	}
	if err := g.st.ensure(); err != nil {
		return bail()
	}
	// A leader that has settled this update says so with wakeSignal, so that the
	// members of a group leave together instead of one by one through the line.
	wake := make(chan os.Signal, 1)
	signal.Notify(wake, wakeSignal)
	defer signal.Stop(wake)
	rec := pendingRecord{Key: g.key, Proc: self(), Update: g.u}
	if err := g.st.addPending(g.id, rec); err != nil {
		return bail()
	}
	if held {
		defer f.Close()
		return g.atHead(ctx)
	}
	held, withdrawn, settled := g.queue(ctx, f, wake)
	switch {
	case settled != nil:
		_, err := r.Stderr.Write(settled)
		return 0, err
	case held && withdrawn:
		defer f.Close()
		return r.inLine(ctx, g.args, g.lineDir)
	case withdrawn:
		if ctx.Err() != nil {
			return 128, ctx.Err()
		}
		return r.single(ctx, g.args)
	case !held:
		// Interrupted while a leader holds the update: it may yet be applied, as
		// with a git interrupted in its commit.
		if ctx.Err() != nil {
			return 128, ctx.Err()
		}
		return 128, errors.New("coalescing: the line failed while a leader holds this update; its outcome is unknown")
	}
	defer f.Close()
	return g.atHead(ctx)
}

// queue waits for the line on f. Patience is what is left of the retry budget; it is
// asked for (which may read git config) only if the wait outlasts FirstLockWait. When
// it runs out, or ctx is done, the update is withdrawn, unless a leader has already
// claimed it: then only the outcome can end the wait (or ctx).
//
// A wake-up from a leader that recorded "ok" for this update ends the wait at once:
// settled is then git's stderr for it (non-nil, perhaps empty).
func (g *grouper) queue(ctx context.Context, f *os.File, wake <-chan os.Signal) (held, withdrawn bool, settled []byte) {
	w := startLineWait(f)
	timer := time.NewTimer(FirstLockWait)
	defer timer.Stop()
	timeout := timer.C
	patienceKnown := false
	for {
		select {
		case err := <-w.done:
			if err != nil {
				ok, _ := g.st.withdraw(g.id)
				return false, ok, nil
			}
			return true, false, nil
		case <-ctx.Done():
			ok, _ := g.st.withdraw(g.id)
			if !w.abandon() {
				f.Close() // it came just now; leave it
			}
			return false, ok, nil
		case <-timeout:
			if !patienceKnown {
				// While leaders keep committing, the line moves and the budget (which
				// may cost a git config) is not needed yet.
				if g.st.movedWithin(FirstLockWait) {
					timer.Reset(FirstLockWait)
					continue
				}
				patienceKnown = true
				if rem := g.r.remaining(); rem > 0 {
					timer.Reset(rem)
					continue
				}
			}
			// Only a withdrawal the file system confirmed lets this update go alone:
			// anything else may be in a leader's hands.
			if ok, err := g.st.withdraw(g.id); ok && err == nil {
				return !w.abandon(), true, nil
			}
			timeout = nil
		case <-wake:
			kind, stderr, found, err := g.st.outcome(g.id)
			if err != nil || !found || kind != outcomeOK {
				continue // "solo" runs at the head of the line
			}
			g.st.removeOutcome(g.id)
			if !w.abandon() {
				f.Close()
			}
			if stderr == nil {
				stderr = []byte{}
			}
			return false, false, stderr
		}
	}
}

// atHead runs once this invocation holds the line: finish dead leaders' groups, then
// report this update's outcome if a leader recorded one, else lead a group with it.
func (g *grouper) atHead(ctx context.Context) (int, error) {
	for round := 0; ; round++ {
		if err := g.st.recover(ctx); err != nil {
			return g.alone(ctx, err)
		}
		kind, stderr, found, err := g.st.outcome(g.id)
		if err != nil {
			return g.alone(ctx, err)
		}
		if found {
			g.st.removeOutcome(g.id)
			if kind == outcomeOK {
				if _, err := g.r.Stderr.Write(stderr); err != nil {
					return 0, err
				}
				return 0, nil
			}
			return g.r.inLine(ctx, g.args, g.lineDir)
		}
		if round > 1 || !g.st.isPending(g.id) {
			return g.alone(ctx, errors.New("coalescing: no outcome recorded"))
		}
		if err := g.lead(ctx); err != nil {
			if errors.Is(err, errCrash) {
				return 128, err
			}
			if ctx.Err() != nil {
				g.st.withdraw(g.id) // interrupted before its group committed
				return 128, err
			}
			// The store could not record something: what recovery can settle it
			// settles in the next round; anything else runs alone.
			continue
		}
	}
}

// alone runs the update without a group, holding the line, once it is certain that
// no leader has it: withdrawn from pending, or never there.
func (g *grouper) alone(ctx context.Context, why error) (int, error) {
	if ok, err := g.st.withdraw(g.id); !ok && (err != nil || g.claimedStill()) {
		return 128, errors.Join(errors.New("refretry: coalescing: the outcome of this update cannot be determined"), why, err)
	}
	return g.r.inLine(ctx, g.args, g.lineDir)
}

func (g *grouper) claimedStill() bool {
	_, err := os.Lstat(g.st.path(dirClaimed, g.id))
	return err == nil
}

// wakeSignal is what a leader sends the members of a group it has settled. Its
// default action is to be ignored, so a signal that reaches another process (a reused
// pid) does no harm; a refretry that gets one only looks for its outcome.
const wakeSignal = syscall.SIGWINCH
