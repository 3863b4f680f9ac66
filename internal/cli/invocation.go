package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/refretry/refretry/ci"
	"github.com/refretry/refretry/internal/gitexec"
	"github.com/refretry/refretry/internal/report"
	"github.com/refretry/refretry/retry"
	"github.com/refretry/refretry/settings"
)

// invocation is one run of a command: refretry's options (as given, then resolved),
// the caller's environment and streams, and git config once it has been read.
// Commands read from it; nothing flows back up.
type invocation struct {
	ctx   context.Context
	arm   func()   // starts catching signals (Signals.Arm); nil: never
	opts  *Options // kong's, the plain path's, or the shim's (-C and --git set)
	env   []string
	s     Streams
	asGit bool // run by the shim, for a program that ran git (RunAsGit)

	config map[string]string // git config's refretry.* keys, lower-cased; nil until read
}

// getenv looks a variable up in the caller's environment.
func (in *invocation) getenv(key string) string { return gitexec.Getenv(in.env, key) }

// check resolves the command line and the environment, which are known before git
// runs: a bad value there is a usage error (exit 129).
func (in *invocation) check() error {
	for _, s := range in.opts.settings() {
		if err := s.resolve(in.env); err != nil {
			return err
		}
	}
	return nil
}

// git is the git to run: --git, else REFRETRY_GIT, else git on PATH. (Not git config:
// choosing the git would need a git first.)
func (in *invocation) git() string { return in.opts.Git.V }

// readConfig returns the refretry.* variables git config sees for the repository,
// keys lower-cased as git prints them. A failure reads as no configuration: the
// defaults then apply. It runs git once per invocation.
func (in *invocation) readConfig() map[string]string {
	if in.config != nil {
		return in.config
	}
	in.config = map[string]string{}
	out, err := gitexec.Command(in.ctx, in.git(), in.opts.Dirs, in.env, "config", "--get-regexp", `^refretry\.`).Output()
	if err != nil {
		return in.config
	}
	for line := range strings.Lines(string(out)) {
		k, v, _ := strings.Cut(strings.TrimSuffix(line, "\n"), " ")
		if k != "" {
			in.config[k] = v // later lines (more specific files) win
		}
	}
	return in.config
}

// settings applies flag > environment > git config > default to the retry settings.
// git config is read here, and this runs only once a retry needs them, so the common
// case (the first attempt succeeds) starts no extra git.
func (in *invocation) settings() (settings.Settings, error) {
	o, cfg := in.opts, in.readConfig()
	for _, s := range o.settings() {
		if err := s.configure(cfg); err != nil {
			return settings.Settings{}, err
		}
	}
	p := retry.DefaultPolicy()
	p.Timeout, p.MaxAttempts, p.InitialDelay, p.MaxDelay = o.Timeout.V, o.MaxAttempts.V, o.InitialDelay.V, o.MaxDelay.V
	if err := p.Validate(); err != nil {
		return settings.Settings{}, err
	}
	// The default budget of a push that waits on other jobs counts only the time in
	// which nothing moved, up to the ceiling; a timeout the user gave is a hard cap.
	ceiling := settings.DefaultCeiling
	if _, inConfig := cfg["refretry.timeout"]; o.Timeout.given || inConfig {
		ceiling = p.Timeout
	}
	return settings.Settings{Policy: p, StaleAfter: o.StaleAfter.V, PIDGrace: o.PIDGrace.V,
		BreakStaleLocks: o.BreakStaleLocks.V, PushRebase: o.PushRebase.V, Ceiling: ceiling}, nil
}

// runnerConfig is what every Runner a command builds is configured with: the git, its
// directories and environment, the settings (read once something has failed), and
// the reporter's hooks.
func (in *invocation) runnerConfig(lg *report.Log) settings.Config {
	return settings.Config{Git: in.git(), Dirs: in.opts.Dirs, Env: in.env, Settings: in.settings, OnAttempt: lg.Attempt, Note: lg.Note}
}

// log starts the reports of one run of command (internal/report).
func (in *invocation) log(command string) *report.Log {
	c := report.Config{
		Command: command, Stderr: in.s.Stderr, Getenv: in.getenv, Git: in.git(), Shim: in.asGit,
		File:       in.opts.LogFile.V,
		Configured: in.logConfigured,
		Version:    func() string { return gitexec.Version(in.ctx, in.git(), in.env) },
	}
	if in.opts.LogFormat.given {
		c.Format = in.opts.LogFormat.V
	}
	return report.Start(c)
}

// logConfigured is what git config says of the log options the command line and the
// environment left unset. It reads git config when read is true; otherwise it answers
// only if git config was read already (for the retry settings).
func (in *invocation) logConfigured(read bool) (ci.Format, string) {
	cfg := in.config
	if read {
		cfg = in.readConfig()
	}
	format, _, err := in.opts.LogFormat.fromConfig(cfg)
	if err != nil {
		fmt.Fprintf(in.s.Stderr, "refretry: %v\n", err)
	}
	file, _, err := in.opts.LogFile.fromConfig(cfg)
	if err != nil {
		fmt.Fprintf(in.s.Stderr, "refretry: %v\n", err)
	}
	return format, file
}
