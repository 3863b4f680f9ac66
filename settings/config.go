package settings

import (
	"time"

	"github.com/refretry/refretry/internal/realtime"
	"github.com/refretry/refretry/retry"
)

// Config is the configuration every Runner has (those of packages transaction, push,
// fetch, gather and forge embed it): which git it runs, where and in what environment,
// the settings it asks for once something has failed, the hooks it reports to, and
// the clock and randomness it waits and jitters with. Each Runner's documentation
// says when it asks for the settings and what it notes. The defaults of its zero
// fields are decided here, once, for every Runner.
type Config struct {
	Git  string   // git executable: a path, or a name looked up in PATH ("" means "git")
	Dirs []string // -C directories, in order
	Env  []string // the caller's whole environment

	// Settings supplies the retry budget and schedule and the stale-lock policy. A
	// Runner calls it at most once a run, and only when it needs it (as a rule,
	// after the first failure that may be retried), so that reading them (from git
	// config, say) costs nothing when the first attempt succeeds. nil means
	// Default().
	Settings func() (Settings, error)
	// OnAttempt, if set, is called after every attempt; a failed one's Err is a
	// *failure.Error, or wraps one.
	OnAttempt func(retry.Attempt)
	// Note, if set, is told what the Runner did besides running git (a stale lock it
	// removed, a rebase, a gather), as a kind and a line.
	Note func(kind, msg string)
	// Clock and Rand time and randomise every wait of a run (the retry loop's
	// included); nil means real time and math/rand's process-wide source.
	Clock retry.Clock
	Rand  func() float64
}

// GitPath is the git to run: Git, or "git".
func (c *Config) GitPath() string {
	if c.Git == "" {
		return "git"
	}
	return c.Git
}

// Load is what Settings supplies, or Default() when it is nil.
func (c *Config) Load() (Settings, error) {
	if c.Settings == nil {
		return Default(), nil
	}
	return c.Settings()
}

// Now is the time on Clock.
func (c *Config) Now() time.Time {
	clock, _ := c.Clocks()
	return clock.Now()
}

// Clocks are Clock and Rand, with nil meaning the real clock and math/rand's
// process-wide source.
func (c *Config) Clocks() (retry.Clock, func() float64) {
	clock, random := c.Clock, c.Rand
	if clock == nil {
		clock = realtime.Clock{}
	}
	if random == nil {
		random = realtime.Float64
	}
	return clock, random
}
