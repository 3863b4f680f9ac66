package cli

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/refretry/refretry/internal/gitexec"
	"github.com/refretry/refretry/retry"
	"github.com/refretry/refretry/transaction"
)

// defaultStaleAfter is how old a lock must be before refretry calls it stale. git holds
// ref locks for milliseconds; docs/defaults.md has the measurements.
const defaultStaleAfter = 2 * time.Minute

func defaultVars() map[string]string {
	p := retry.DefaultPolicy()
	return map[string]string{
		"timeout":  p.Timeout.String(),
		"attempts": strconv.Itoa(p.MaxAttempts),
		"initial":  p.InitialDelay.String(),
		"maxdelay": p.MaxDelay.String(),
		"stale":    defaultStaleAfter.String(),
	}
}

// setting is one policy knob and the three places it may come from, in precedence
// order after the flag.
type setting struct {
	flag   string // the --name, for messages
	value  string // from the command line, "" if not given
	envKey string
	cfgKey string // lower-case, as git config --get-regexp prints it
	apply  func(s *transaction.Settings, v string) error
}

func settingsTable(g *Globals) []setting {
	dur := func(set func(*transaction.Settings, time.Duration)) func(*transaction.Settings, string) error {
		return func(s *transaction.Settings, v string) error {
			d, err := time.ParseDuration(v)
			if err != nil || d < 0 {
				return fmt.Errorf("not a non-negative duration such as 500ms, 30s or 2m")
			}
			set(s, d)
			return nil
		}
	}
	return []setting{
		{"--timeout", g.Timeout, "REFRETRY_TIMEOUT", "refretry.timeout",
			dur(func(s *transaction.Settings, d time.Duration) { s.Policy.Timeout = d })},
		{"--max-attempts", g.MaxAttempts, "REFRETRY_MAX_ATTEMPTS", "refretry.maxattempts",
			func(s *transaction.Settings, v string) error {
				n, err := strconv.Atoi(v)
				if err != nil || n < 0 {
					return fmt.Errorf("not a non-negative integer")
				}
				s.Policy.MaxAttempts = n
				return nil
			}},
		{"--initial-delay", g.InitialDelay, "REFRETRY_INITIAL_DELAY", "refretry.initialdelay",
			dur(func(s *transaction.Settings, d time.Duration) { s.Policy.InitialDelay = d })},
		{"--max-delay", g.MaxDelay, "REFRETRY_MAX_DELAY", "refretry.maxdelay",
			dur(func(s *transaction.Settings, d time.Duration) { s.Policy.MaxDelay = d })},
		{"--stale-after", g.StaleAfter, "REFRETRY_STALE_AFTER", "refretry.staleafter",
			dur(func(s *transaction.Settings, d time.Duration) { s.StaleAfter = d })},
		// --break-stale-locks (transaction/breaklock.go): git's boolean spellings.
		{"--break-stale-locks", map[bool]string{true: "true"}[g.BreakStaleLocks], "REFRETRY_BREAK_STALE_LOCKS", "refretry.breakstalelocks",
			func(s *transaction.Settings, v string) error {
				on, ok := gitBool(v)
				if !ok {
					return fmt.Errorf("not a boolean such as 1, true, 0 or false")
				}
				s.BreakStaleLocks = on
				return nil
			}},
	}
}

// explicit returns the value given on the command line or, failing that, in the
// environment, with where it came from; "" when neither gave one.
func (st setting) explicit(e env) (value, from string) {
	if st.value != "" {
		return st.value, st.flag + " " + strconv.Quote(st.value)
	}
	if v := e.get(st.envKey); v != "" {
		return v, st.envKey + "=" + strconv.Quote(v)
	}
	return "", ""
}

// gitPath is the git to run: --git, else REFRETRY_GIT, else git on PATH. (Not git
// config: choosing the git would need a git first.)
func gitPath(g *Globals, e env) string {
	if g.Git != "" {
		return g.Git
	}
	if v := e.get("REFRETRY_GIT"); v != "" {
		return v
	}
	return "git"
}

// checkFlags validates the values given on the command line and in the environment,
// which are known before git runs: a bad one is a usage error (exit 129).
func checkFlags(g *Globals, e env) error {
	var scratch transaction.Settings
	for _, st := range settingsTable(g) {
		if v, from := st.explicit(e); v != "" {
			if err := st.apply(&scratch, v); err != nil {
				return &usageError{fmt.Sprintf("%s: %v", from, err)}
			}
		}
	}
	return nil
}

// resolveSettings applies flag > environment > git config > default. git config is read
// only here, and this runs only after a lock-contention failure, so the common case
// (first attempt succeeds) starts no extra git process.
func resolveSettings(ctx context.Context, g *Globals, e env, git string) (transaction.Settings, error) {
	s := transaction.Settings{Policy: retry.DefaultPolicy(), StaleAfter: defaultStaleAfter}
	var cfg map[string]string
	for _, st := range settingsTable(g) {
		v, from := st.explicit(e)
		if v == "" {
			if cfg == nil {
				cfg = readConfig(ctx, g, e, git)
			}
			v = cfg[st.cfgKey]
			from = "git config " + st.cfgKey + "=" + strconv.Quote(v)
		}
		if v == "" {
			continue
		}
		if err := st.apply(&s, v); err != nil {
			return s, fmt.Errorf("bad value, %s: %v", from, err)
		}
	}
	if err := s.Policy.Validate(); err != nil {
		return s, err
	}
	return s, nil
}

// readConfig returns the refretry.* variables git config sees for the repository,
// and extensions.refstorage (the ref backend, for the logs), keys lower-cased as git
// prints them. A failure reads as no configuration: the defaults then apply. It runs
// git once per invocation; later calls return the same map.
func readConfig(ctx context.Context, g *Globals, e env, git string) map[string]string {
	if g.config != nil {
		return g.config
	}
	cfg := map[string]string{}
	g.config = cfg
	out, err := gitexec.Command(ctx, git, g.Dirs, e, "config", "--get-regexp", `^(refretry\.|extensions\.refstorage$)`).Output()
	if err != nil {
		return cfg
	}
	for _, line := range strings.Split(string(out), "\n") {
		k, v, _ := strings.Cut(line, " ")
		if k != "" {
			cfg[k] = v // later lines (more specific files) win
		}
	}
	return cfg
}

// --coalesce (internal/group, docs/coalescing.md) -----------------------------------

// coalesceMode says whether an invocation may join a group commit.
type coalesceMode int

const (
	coalesceDefault coalesceMode = iota // on for reftable, unless git config says no (asked only by a leader)
	coalesceOn                          // asked for: --coalesce, REFRETRY_COALESCE=1
	coalesceOff                         // REFRETRY_COALESCE=0
)

// coalescing applies --coalesce > REFRETRY_COALESCE > git config refretry.coalesce >
// default. The flag and the environment are known at once. git config is read only
// by a leader about to commit a group (group.Config.Allowed), that is when there is
// contention: an invocation that meets none starts no extra git.
func coalescing(g *Globals, e env) (coalesceMode, error) {
	if g.Coalesce {
		return coalesceOn, nil
	}
	v := e.get("REFRETRY_COALESCE")
	if v == "" {
		return coalesceDefault, nil
	}
	on, ok := gitBool(v)
	switch {
	case !ok:
		return coalesceOff, &usageError{fmt.Sprintf("REFRETRY_COALESCE=%q: not a boolean such as 1, true, 0 or false", v)}
	case on:
		return coalesceOn, nil
	}
	return coalesceOff, nil
}

// coalesceAllowed is git config's say on default coalescing: refretry.coalesce unset
// or true.
func coalesceAllowed(ctx context.Context, g *Globals, e env, git string) bool {
	v, set := readConfig(ctx, g, e, git)["refretry.coalesce"]
	if !set || v == "" { // a bare "coalesce" line in a config file means true
		return true
	}
	on, ok := gitBool(v)
	return on || !ok
}

// gitBool reads git's spellings of a boolean.
func gitBool(v string) (on, ok bool) {
	switch strings.ToLower(v) {
	case "1", "true", "yes", "on":
		return true, true
	case "0", "false", "no", "off":
		return false, true
	}
	return false, false
}
