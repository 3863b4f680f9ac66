package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/refretry/refretry/ci"
	"github.com/refretry/refretry/internal/gitexec"
	"github.com/refretry/refretry/internal/report"
	"github.com/refretry/refretry/settings"
)

// invocation is one run of a command: refretry's options as given, the caller's
// environment and streams, and what has been learnt from them on the way (the values
// they set, git config once it has been read). Commands read from it; nothing flows
// back up.
type invocation struct {
	ctx   context.Context
	arm   func()            // starts catching signals (Signals.Arm); nil: never
	opts  *Options          // -C's directories, and any option the caller set (the shim's --git)
	flags map[string]string // the command line's text of every other option, by spelling (line.go)
	env   []string
	s     Streams
	asGit bool // run by the shim, for a program that ran git (RunAsGit)

	values Options           // from the caller, the command line and the environment (check)
	set    map[string]bool   // the options those set, by flag name
	config map[string]string // git config's refretry.* keys, lower-cased; nil until read
}

// getenv looks a variable up in the caller's environment.
func (in *invocation) getenv(key string) string { return gitexec.Getenv(in.env, key) }

// check resolves the command line and the environment, which are known before git
// runs: a bad value there is a usage error (exit 129).
func (in *invocation) check() error {
	v, set, err := given(in.opts, in.flags, in.env)
	in.values, in.set = v, set
	return err
}

// git is the git to run: --git, else REFRETRY_GIT, else git on PATH. (Not git config:
// choosing the git would need a git first.)
func (in *invocation) git() string { return in.values.Git }

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
	v, err := withConfig(in.values, in.set, in.readConfig())
	if err != nil {
		return settings.Settings{}, err
	}
	p := v.Policy()
	if err := p.Validate(); err != nil {
		return settings.Settings{}, err
	}
	// The default budget of a push that waits on other jobs counts only the time in
	// which nothing moved, up to the ceiling; a timeout the user gave is a hard cap.
	ceiling := settings.DefaultCeiling
	if _, inConfig := in.config["refretry.timeout"]; in.set["--timeout"] || inConfig {
		ceiling = p.Timeout
	}
	return settings.Settings{Policy: p, StaleAfter: v.StaleAfter, PIDGrace: v.PIDGrace, BreakStaleLocks: v.BreakStaleLocks,
		PushRebase: v.PushRebase, Ceiling: ceiling}, nil
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
		File:       in.values.LogFile,
		Configured: in.logConfigured,
		Version:    func() string { return gitexec.Version(in.ctx, in.git(), in.env) },
	}
	if in.set["--log-format"] {
		c.Format = in.values.LogFormat
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
	v := Options{}
	for _, o := range optionTable() {
		if o.name != "--log-format" && o.name != "--log-file" {
			continue
		}
		if err := o.fromConfig(&v, in.set, cfg); err != nil {
			fmt.Fprintf(in.s.Stderr, "refretry: %v\n", err)
		}
	}
	return v.LogFormat, v.LogFile
}
