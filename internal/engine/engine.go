// Package engine is the one attempt loop every refretry command runs in: git
// update-ref, push (with --rebase, --regenerate, and --gather's staging) and fetch.
//
// A command supplies one attempt (run git once, and classify what it said into a
// *failure.Error) and, where it has one, a cure to apply before the next attempt (a
// rebase, a regeneration, a check of the remote, a resubmission). The engine owns the
// rest, the same way for all:
//
//   - the loop, its budget (a deadline and an attempt cap) and its schedule (jittered
//     exponential backoff, a server's Retry-After honoured; after a cure that changed
//     what the next attempt does, a random pause in units of the shortest attempt,
//     its window doubling with each cure), through package retry;
//   - the judgement of a local lock a failure names (internal/lockfile's rule: its age,
//     its holder), turning contention into a stale lock, and removing a stale lock when
//     asked to;
//   - the notes on what it did besides running git (a removed lock, a rebase), which
//     go to the command's reporter, as records in every log format;
//   - the final output: the command writes what its final attempt printed once, after
//     the loop, and nothing of an attempt that was retried.
package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/refretry/refretry/failure"
	"github.com/refretry/refretry/internal/lockfile"
	"github.com/refretry/refretry/retry"
	"github.com/refretry/refretry/settings"
)

// Command is a refretry command as the engine runs it.
type Command interface {
	// Attempt runs git once: nil when the command succeeded, a *failure.Error when
	// git failed, or another error that ends the run (git could not be started, the
	// caller's stream failed).
	Attempt(ctx context.Context, a *Attempt) error
	// Final writes what the final attempt printed and returns the exit code for the
	// run's outcome: err is nil, a *failure.Error, an error wrapping one (the budget
	// ran out: *retry.ExhaustedError), or another error.
	Final(err error) (code int, werr error)
}

// Curer is a Command that can act on a failure before the next attempt.
type Curer interface {
	// Cure is called after each failed attempt, once the engine has judged the lock
	// it names. It returns what to do next, and an error that ends the run (the cure
	// itself failed: a rebase conflict, a generator that failed).
	Cure(ctx context.Context, a *Attempt, f *failure.Error) (Next, error)
}

// Next is what a cure decided.
type Next int

const (
	// Stop lets the failure stand: retried with backoff when its class is retryable,
	// else the end of the run.
	Stop Next = iota
	// Retry: the next attempt runs whatever the class, for the cure changed what it
	// does; after a pause (run.pause) that spreads out those racing with it.
	Retry
	// Done: the cure found the command done (the remote already holds the push). The
	// failed attempt is recorded as it was; the next one, at once, is the success,
	// and runs no git.
	Done
)

// RefusedGrace is how long a run retries a remote that has not once accepted a
// connection: every attempt so far failed with nothing listening at its address (a
// failure.Error with Refused). That is most often a wrong URL or port, which no
// retry fixes; a server that restarts is back within seconds. Once any attempt has
// reached the remote, transport failures are retried for the whole budget.
const RefusedGrace = 10 * time.Second

// Rule is the stale-lock rule of s: lockfile.Rule's two limits.
func Rule(s settings.Settings) lockfile.Rule {
	return lockfile.Rule{StaleAfter: s.StaleAfter, PIDGrace: s.PIDGrace}
}

// Engine runs commands. Its fields are its configuration; one Engine may run any
// number of commands, one after another or at once. Of its Config it reads the
// Settings (asked at most once a run: after the first failure, or earlier when an
// attempt asks, Attempt.Left), OnAttempt, Note (what the engine and the command did
// besides running git; kind "stale-lock-removed", "rebase", …, and one line), Clock
// and Rand; Git, Dirs and Env are the command's to use.
type Engine struct {
	settings.Config
}

// For is the engine of a Runner configured with c (its settings, hooks, clock and
// randomness) that also keeps each attempt's number in *attempts, for its Result.
func For(c *settings.Config, attempts *int) *Engine {
	e := &Engine{Config: *c}
	e.OnAttempt = func(a retry.Attempt) {
		*attempts = a.Number
		if c.OnAttempt != nil {
			c.OnAttempt(a)
		}
	}
	return e
}

// Attempt is one attempt's view of its run.
type Attempt struct {
	N   int // 1 for the first attempt
	run *run
}

// Left is what the budget has left (a day when it has no deadline). It loads the
// settings when they are not loaded yet.
func (a *Attempt) Left() time.Duration { return a.run.left() }

// Settings are the run's settings, loaded once.
func (a *Attempt) Settings() (settings.Settings, error) { return a.run.settings() }

// Note reports something the command did besides running git.
func (a *Attempt) Note(kind, msg string) { a.run.note(kind, msg) }

// SettingsKnown reports whether the settings are loaded (asking for them may cost a
// git process).
func (a *Attempt) SettingsKnown() bool { return a.run.loaded }

// Renew says that the command made progress that another attempt need not repeat (a
// --stdin session's transactions committed): when the budget runs out, a new one
// starts, instead of the run ending.
func (a *Attempt) Renew() { a.run.renewed = true }

// Progress says that the remote moved under the command: another job's push landed,
// so the pipeline is making progress even though this command has not got through
// yet. With settings whose budget counts only the time without progress
// (settings.Settings.Progressive), a spent budget then starts over, within the
// settings' Ceiling.
func (a *Attempt) Progress() { a.run.progressed = true }

// run is one Run's state.
type run struct {
	*Engine
	cmd        Command
	curer      Curer     // cmd, when it has a cure; else nil
	began      time.Time // when the run began (the ceiling counts from here)
	start      time.Time // when the current budget began
	loaded     bool
	s          settings.Settings
	sErr       error
	cured      bool          // the last failure was cured: the next attempt runs after run.pause
	losses     int           // failures cured so far: the pause's window doubles with each
	slot       time.Duration // the shortest attempt with its cure so far: the pause's unit
	done       bool          // a cure found the command done: the next attempt ends the run
	renewed    bool          // progress since the budget started: a spent budget starts over
	progressed bool          // the remote moved since the budget started (Attempt.Progress)
	reached    bool          // an attempt reached the remote (it failed otherwise than Refused, or succeeded)
	refused    bool          // no attempt reached the remote within RefusedGrace: the run ends
}

func (r *run) settings() (settings.Settings, error) {
	if !r.loaded {
		r.loaded = true
		r.s, r.sErr = r.Load()
	}
	return r.s, r.sErr
}

// policy is the retry loop's Resolve: the settings' policy, loaded after the first
// failure; a budget that starts over is cut to what the ceiling leaves.
func (r *run) policy() (retry.Policy, error) {
	s, err := r.settings()
	p := s.Policy
	if err == nil && s.Progressive() {
		p.Timeout = max(min(p.Timeout, s.Ceiling-r.now().Sub(r.began)), time.Millisecond)
	}
	return p, err
}

func (r *run) left() time.Duration {
	s, err := r.settings()
	if err != nil || s.Policy.Timeout <= 0 {
		return 24 * time.Hour
	}
	left := s.Policy.Timeout - r.now().Sub(r.start)
	if s.Progressive() {
		left = min(left, s.Ceiling-r.now().Sub(r.began))
	}
	return max(left, 0)
}

func (r *run) note(kind, msg string) {
	if r.Note != nil {
		r.Note(kind, msg)
	}
}

func (r *run) now() time.Time { return r.Now() }

// Run runs c until it succeeds, fails for a reason another attempt cannot get past,
// or the budget is spent, and returns c.Final's exit code and the run's outcome.
func (e *Engine) Run(ctx context.Context, c Command) (int, error) {
	r := &run{Engine: e, cmd: c}
	r.curer, _ = c.(Curer)
	r.began = r.now()
	r.start = r.began
	err := r.loop(ctx, &retry.Retrier{
		Retryable: r.retryable,
		Clock:     e.Clock, Rand: e.Rand, OnAttempt: e.OnAttempt,
		Resolve: r.policy,
	})
	if r.done {
		err = nil // found done, though the budget allowed no attempt after the cure
	}
	return c.Final(unwrapCured(err))
}

// loop runs the retry loop, and runs it again with a new budget when the budget ran
// out after the command made progress (Attempt.Renew), or after the remote moved
// (Attempt.Progress) while the ceiling allows. A budget that counted only the time
// without progress says which rule ended it.
func (r *run) loop(ctx context.Context, retrier *retry.Retrier) error {
	for {
		r.renewed, r.progressed = false, false
		err := retrier.Do(ctx, r.attempt)
		var ex *retry.ExhaustedError
		if !errors.As(err, &ex) || ex.Reason == retry.ReasonCanceled {
			return err
		}
		s, _ := r.settings()
		ceiling := s.Progressive() && r.now().Sub(r.began) >= s.Ceiling
		if !r.renewed && (!r.progressed || !s.Progressive() || ceiling) {
			if s.Progressive() && ex.Reason == retry.ReasonDeadline {
				ex.Reason = map[bool]retry.Reason{true: retry.ReasonCeiling, false: retry.ReasonStalled}[ceiling]
			}
			ex.Elapsed = r.now().Sub(r.began)
			return err
		}
		r.start = r.now() // progress was made: a new budget
	}
}

// retryable is the retry loop's verdict: a failure is retried when its class says so,
// or when its cure was applied.
func (r *run) retryable(err error) bool {
	var f *failure.Error
	return errors.As(err, &f) && !r.refused && (f.Class.Retryable() || r.cured)
}

// attempt is the retry loop's operation: one attempt of the command, the lock its
// failure names judged, and the failure cured when the command can.
func (r *run) attempt(ctx context.Context, n int) error {
	if r.done {
		// The last failure's cure found the command done: this attempt is the
		// success it found, and runs no git.
		return nil
	}
	r.cured = false
	begin := r.now()
	a := &Attempt{N: n, run: r}
	err := r.cmd.Attempt(ctx, a)
	var f *failure.Error
	if !errors.As(err, &f) {
		r.reached = r.reached || err == nil
		return err
	}
	r.judgeRefused(f)
	r.judgeLock(f)
	if r.curer == nil {
		return err
	}
	return r.cure(ctx, a, f, err, begin)
}

// cure asks the command to act on the failure f (err wraps it) of the attempt that
// began at begin, and returns what the loop sees: err, marked cured with the pause
// before the next attempt, or the cure's own error.
func (r *run) cure(ctx context.Context, a *Attempt, f *failure.Error, err error, begin time.Time) error {
	switch next, cerr := r.curer.Cure(ctx, a, f); {
	case cerr != nil:
		return cerr
	case next == Done:
		r.done, r.cured = true, true
		return cured{err, 0}
	case next == Retry:
		r.cured = true
		return cured{err, r.pause(r.now().Sub(begin))}
	}
	return err
}

// pause is the wait before the attempt that follows a cure. A cure that had to be
// applied means another process got there first (it pushed to the branch between
// this one's fetch and its push), and it will again if every loser comes straight
// back: the losers of one round would make the next round's race, and N racers
// would make N²/2 attempts. So each waits a random time, uniform in a window of one
// slot doubled for each cure in the run before this one, up to 32 slots: binary
// exponential backoff, as on a shared Ethernet. The slot is the shortest attempt
// (with its cure) the run has seen: one turn at the remote when it is least loaded.
// The cure itself runs after the pause (push's pending cure), so that the tip it
// fetches is fresh when the push follows. Never past what the budget leaves for one
// more attempt.
func (r *run) pause(cycle time.Duration) time.Duration {
	if r.slot == 0 || cycle < r.slot {
		r.slot = cycle
	}
	r.losses++
	window := r.slot << min(r.losses-1, 5)
	p := time.Duration(r.random() * float64(window))
	return min(p, max(r.left()-cycle, 0))
}

func (r *run) random() float64 {
	_, random := r.Clocks()
	return random()
}

// cured is a failure whose cure was applied: the next attempt follows after pause.
type cured struct {
	error
	pause time.Duration
}

func (c cured) Unwrap() error        { return c.error }
func (c cured) Pause() time.Duration { return c.pause }

// unwrapCured is err without the cured wrapper the loop saw.
func unwrapCured(err error) error {
	var ex *retry.ExhaustedError
	if errors.As(err, &ex) {
		if c, ok := ex.Err.(cured); ok {
			ex.Err = c.error
		}
		return err
	}
	if c, ok := err.(cured); ok {
		return c.error
	}
	return err
}

// judgeRefused ends the run at a refused connection once RefusedGrace has passed
// without any attempt reaching the remote, saying why in the failure's Advice.
func (r *run) judgeRefused(f *failure.Error) {
	if f.Class != failure.Transport || !f.Refused {
		r.reached = true
		return
	}
	if r.reached {
		return
	}
	if waited := r.now().Sub(r.start); waited >= RefusedGrace {
		r.refused = true
		f.Advice = fmt.Sprintf("nothing accepted a connection to the remote in %v of attempts: check its URL and port "+
			"(a remote that has never answered is retried for %v, not the whole budget)", waited.Round(time.Millisecond), RefusedGrace)
	}
}

// judgeLock looks at the local lock a lock failure names: its age and holder, and
// whether it counts as stale under the settings' rule; a stale lock is removed when
// the settings allow it, and the failure becomes contention again. What the engine
// saw goes into the failure's Advice, for the run's last line.
func (r *run) judgeLock(f *failure.Error) {
	if f.Lock == nil || f.Lock.Remote || (f.Class != failure.LockContention && f.Class != failure.StaleLock) {
		return
	}
	s, err := r.settings()
	if err != nil {
		return // the retry loop reports it
	}
	now := time.Now() // a lock's age is the file system's, whatever clock the loop runs on
	if f.Class == failure.LockContention && lockfile.Look(f.Lock, Rule(s), now) {
		f.Class = failure.StaleLock
	}
	defer func() { f.Advice = lockfile.Advice(f.Lock) }()
	if f.Class != failure.StaleLock {
		return
	}
	if s.BreakStaleLocks {
		b, again := lockfile.Remove(f.Lock, Rule(s), now)
		if b != nil {
			r.note("stale-lock-removed", b.String())
		}
		if again {
			f.Class = failure.LockContention
		}
	}
}
