// Package settings is what every refretry command reads only once something has
// failed: the retry budget and schedule, the stale-lock policy, and whether a push
// that lost a race is rebased; and [Config], the configuration every Runner (of
// packages transaction, push, fetch, gather and forge) embeds, with the defaults of
// its zero fields decided once. A Runner takes the settings as a function
// (Config.Settings), so that reading them (from git config, say) costs nothing when
// the first attempt succeeds.
//
// It is a package of its own, with nothing below it but package retry (and the real
// clock retry uses too, internal/realtime), so that a
// caller of push, fetch or gather sets a budget without importing transaction, and so
// that refretry's one attempt loop (internal/engine) reads the very type the Runners
// take. It is not part of package [retry] because retry knows nothing about git, and a
// lock's staleness is git's.
package settings

import (
	"time"

	"github.com/refretry/refretry/retry"
)

// DefaultStaleAfter is how old a lock must be before it is called stale. git holds ref
// locks for milliseconds; docs/defaults.md has the measurements.
const DefaultStaleAfter = 2 * time.Minute

// DefaultCeiling is the hard limit on a push whose budget counts only the time in
// which nothing moved (Settings.Ceiling).
const DefaultCeiling = 15 * time.Minute

// Settings are the knobs a run needs only once something has failed.
type Settings struct {
	// Policy is the retry schedule and budget.
	Policy retry.Policy
	// StaleAfter is the age past which a lock is stale; 0 means that age alone never
	// makes one stale. refretry uses DefaultStaleAfter.
	StaleAfter time.Duration
	// PIDGrace is the age past which a lock whose holder pid (from its ~pid.lock, or
	// git's "no longer running" advice) is not running here is stale; 0 means
	// StaleAfter. Before it the lock is waited for like any other: a holder in another
	// pid namespace (another container sharing the repository) looks just the same.
	PIDGrace time.Duration
	// BreakStaleLocks: remove a local lock found stale, then retry (a remote's locks
	// are the server's, and never removed).
	BreakStaleLocks bool
	// PushRebase: a push rejected because the remote moved the branch is rebased and
	// pushed again, as push.Runner.Rebase does, when the push can be rebased safely
	// (package push says which can). It is the job's opt-in (REFRETRY_PUSH_REBASE,
	// refretry.pushRebase) for pushes whose command line is not refretry's: the git
	// shim's `git push`. Only push reads it.
	PushRebase bool
	// Ceiling makes Policy.Timeout a budget of time without progress, for the pushes
	// that wait on other jobs (a --rebase or --regenerate that keeps losing races to
	// pushes that land, a --gather whose waves keep landing): while the remote's branch
	// moves (or a gather lands a wave), a spent budget starts over, until Ceiling has
	// passed since the run began, which no attempt outlasts. A run whose remote stopped
	// moving ends when the budget does. A Ceiling of Policy.Timeout or less (a user's
	// own --timeout) keeps the budget a plain deadline. Other commands ignore it.
	Ceiling time.Duration
}

// Default is what a Runner whose Settings function is nil uses: [retry.DefaultPolicy]
// and [DefaultStaleAfter], stale locks waited for and never removed, and
// [DefaultCeiling].
func Default() Settings {
	return Settings{Policy: retry.DefaultPolicy(), StaleAfter: DefaultStaleAfter, Ceiling: DefaultCeiling}
}

// Progressive reports whether the budget counts only the time without progress:
// Ceiling is above Policy.Timeout.
func (s Settings) Progressive() bool {
	return s.Policy.Timeout > 0 && s.Ceiling > s.Policy.Timeout
}
