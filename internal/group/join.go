package group

import (
	"context"
	"time"

	"github.com/refretry/refretry/internal/repo"
)

// Config is one invocation that may join a group commit.
type Config struct {
	Git  string   // the git executable
	Dirs []string // -C directories, in order
	Env  []string // the caller's whole environment
	// GitDir and CommonDir are the repository's, as found by the caller.
	GitDir, CommonDir string

	// Store is where git keeps the repository's refs, as found by the caller: its
	// invocations meet at the store's directory, where git takes its locks. On
	// reftable a group is committed as one transaction, unless a
	// reference-transaction hook would see it; elsewhere each update is a
	// transaction of its own, in one git.
	Store repo.Store

	Update  Update
	Options Options

	// Default is set when coalescing was not asked for but is on by default: a
	// group is then formed only when Allowed (nil: yes) says so. Allowed, and
	// whether a hook exists, are asked only by a leader about to form a group, and
	// its answers are passed on to the next leader for a second.
	Default bool
	Allowed func() bool
	// GiveUp is asked whether this invocation has waited long enough for a leader
	// (waited is counted from Join) and should run its update alone: first before
	// it looks for the line, then when the time it named has come. When it says no,
	// again says how much longer to wait before asking again (0 or less: never; the
	// wait then ends only with the leader's word or ctx), so that a member waits
	// without waking up in between. Nil: after a minute.
	GiveUp func(waited time.Duration) (giveUp bool, again time.Duration)
}

// Outcome is what became of an invocation's update.
type Outcome struct {
	// Applied: a group's git committed the update; Stderr is what that git wrote on
	// its standard error (normally nothing), which the caller prints as its own.
	Applied bool
	Stderr  []byte
	// Otherwise the caller runs its update itself, the usual way. If Lease is set,
	// this process leads: whoever comes meanwhile waits behind it, and the caller
	// calls Lease.Release when its update has run.
	Lease *Lease
	// Unknown: the update was handed to a group's git that had not ended when the
	// budget ran out, so whether it was applied cannot be told. Neither applied nor
	// to be run again: the caller reports an error naming the ref
	// (transaction.UnknownError).
	Unknown bool
}

// Join hands the update to its repository's group commit and returns its outcome. It
// never returns an update that may still be applied by another process as not
// applied, and it waits for nothing past the budget (Config.GiveUp): an update
// handed to a git that is still running then is Unknown. ctx ends the wait; the
// outcome is then "run it yourself", and the caller sees ctx's error.
func Join(ctx context.Context, c Config) Outcome {
	return join(ctx, &c)
}
