package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/refretry/refretry/internal/gitexec"
	"github.com/refretry/refretry/internal/platform"
	"github.com/refretry/refretry/internal/report"
	"github.com/refretry/refretry/internal/shim"
	"github.com/refretry/refretry/push"
)

// ShimCmd manages the git shim: refretry installed under the name git, so that tools
// that run `git update-ref` get refretry without being changed (internal/shim).
type ShimCmd struct {
	Install   ShimInstallCmd   `cmd:"" help:"Put a git entry pointing at refretry into DIR and print the PATH line to use; in GitHub Actions also add DIR to GITHUB_PATH."`
	Uninstall ShimUninstallCmd `cmd:"" help:"Remove the git entry from DIR."`
}

// ShimInstallCmd is `refretry shim install`.
type ShimInstallCmd struct {
	Dir string `placeholder:"DIR" help:"Directory for the git entry (default: $XDG_DATA_HOME/refretry/shim or ~/.local/share/refretry/shim)."`
}

// ShimUninstallCmd is `refretry shim uninstall`.
type ShimUninstallCmd struct {
	Dir string `placeholder:"DIR" help:"Directory the git entry was installed in (default as for install)."`
}

// shimDir is --dir made absolute, or the default directory.
func shimDir(dir string, getenv func(string) string) (string, error) {
	if dir == "" {
		return shim.DefaultDir(getenv)
	}
	return filepath.Abs(dir)
}

// selfPath is the refretry executable, with symbolic links resolved.
func selfPath() (string, error) {
	p, err := os.Executable()
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(p)
}

// Run installs the shim. stdout gets only the PATH line, so that
// `eval "$(refretry shim install)"` works; the rest goes to stderr.
func (c *ShimInstallCmd) Run(in *invocation) error {
	if err := in.check(); err != nil {
		return err
	}
	s, getenv := in.s, in.getenv
	dir, err := shimDir(c.Dir, getenv)
	if err != nil {
		return err
	}
	self, err := selfPath()
	if err != nil {
		return fmt.Errorf("shim: cannot find refretry's own executable: %w", err)
	}
	entry, err := shim.Install(dir, self)
	if err != nil {
		return fmt.Errorf("shim: %w", err)
	}
	fmt.Fprintf(s.Stderr, "refretry: installed %s -> %s\n", entry, self)
	// The git that calls through the shim will reach, with the shim first on PATH.
	path := dir + string(filepath.ListSeparator) + getenv("PATH")
	withShim := func(k string) string {
		if k == "PATH" {
			return path
		}
		return getenv(k)
	}
	if found, err := shim.Find(withShim, self); err != nil {
		fmt.Fprintf(s.Stderr, "refretry: warning: %v: set REFRETRY_GIT to the real git\n", err)
	} else {
		fmt.Fprintf(s.Stderr, "refretry: git calls through it reach %s\n", found.Path)
	}
	if getenv("GITHUB_ACTIONS") == "true" && getenv("GITHUB_PATH") != "" {
		if err := appendLine(getenv("GITHUB_PATH"), dir); err != nil {
			return fmt.Errorf("shim: GITHUB_PATH: %w", err)
		}
		fmt.Fprintf(s.Stderr, "refretry: added %s to GITHUB_PATH for the job's later steps\n", dir)
	}
	fmt.Fprintln(s.Stdout, pathLine(dir))
	return nil
}

// Run removes the shim.
func (c *ShimUninstallCmd) Run(in *invocation) error {
	if err := in.check(); err != nil {
		return err
	}
	s := in.s
	dir, err := shimDir(c.Dir, in.getenv)
	if err != nil {
		return err
	}
	self, err := selfPath()
	if err != nil {
		return fmt.Errorf("shim: cannot find refretry's own executable: %w", err)
	}
	removed, err := shim.Uninstall(dir, self)
	switch {
	case err != nil:
		return fmt.Errorf("shim: %w", err)
	case removed:
		fmt.Fprintf(s.Stderr, "refretry: removed %s\n", filepath.Join(dir, shim.EntryName))
	default:
		fmt.Fprintf(s.Stderr, "refretry: no shim in %s\n", dir)
	}
	return nil
}

// pathLine is the shell line that puts dir first on PATH.
func pathLine(dir string) string {
	if filepath.ListSeparator == ';' {
		return "set PATH=" + dir + ";%PATH%"
	}
	return "export PATH=" + platform.ShellQuote(dir) + `:"$PATH"`
}

// appendLine appends line and a newline to the file at path. The line must not
// contain a newline: GITHUB_PATH takes one directory per line.
func appendLine(path, line string) error {
	if strings.ContainsAny(line, "\r\n") {
		return errors.New("the directory name contains a line break")
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(line + "\n"); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// RunAsGit is refretry started under the name git (the shim). It decides before
// anything else: a call that is not `update-ref`, `fetch` or `push` goes to the real
// git through execGit (in place, on Unix) without refretry parsing its own options or
// reading git config, except a call git would hand to an external git-<name> program,
// which the shim runs itself with itself first on PATH (shim.LookExternal). A call
// from a git that refretry runs (shim.BypassVar) always goes to the real git. An
// update-ref or a fetch runs as `refretry update-ref` or `refretry fetch` would, a push
// as shimPush says, with git's global options passed on to the real git; refretry's
// own settings then come from the environment (REFRETRY_TIMEOUT, …) and git config,
// as the shim's command line is git's.
//
// ctx and arm (which starts catching signals; nil: never) matter only for update-ref,
// fetch and push, whose retries need them.
func RunAsGit(ctx context.Context, arm func(), args []string, s Streams, env []string, self string,
	execGit func(path string, args, env []string) (int, error)) int {
	getenv := func(k string) string { return gitexec.Getenv(env, k) }
	call, ok := shim.Parse(args)
	bypass := getenv(shim.BypassVar) != ""
	ours := ok && !bypass && (call.UpdateRef() || call.Fetch() || call.Push())
	if ours && !call.UpdateRef() {
		// A push or a fetch may wait: signals are caught from the moment that is known,
		// before anything else is done (signals.go).
		catchSignals(arm)
	}
	found, err := shim.Find(getenv, self)
	if err != nil {
		fmt.Fprintf(s.Stderr, "refretry (as git): %v\n", err)
		return report.ExitGitMissing
	}
	childEnv := gitexec.Setenv(env, shim.HandoffVar, found.Handoff)
	if ok && !bypass && !ours {
		// An external git-<name> (git filter-repo, say): the shim runs it itself, so
		// that the git it runs is the shim again and not the git in git's exec path.
		if x, ok := shim.LookExternal(call, env, found.Path, self); ok {
			if code, started := shim.RunExternal(x); started {
				return code
			}
		}
	}
	if !ours {
		code, err := execGit(found.Path, args, childEnv)
		if err != nil {
			fmt.Fprintf(s.Stderr, "refretry (as git): %v\n", err)
		}
		return code
	}
	if call.HasGitDir {
		// git sets GIT_DIR from --git-dir before anything reads it; refretry's own
		// look at the repository (where its lock is) must see the same one.
		childEnv = gitexec.Setenv(childEnv, "GIT_DIR", call.GitDir)
	}
	childEnv = gitexec.Setenv(childEnv, shim.BypassVar, "1")
	opts := &Options{Dirs: call.Dirs}
	opts.Git.set("--git", found.Path)
	in := &invocation{ctx: ctx, arm: arm, opts: opts, env: childEnv, s: s, asGit: true}
	switch {
	case call.Fetch():
		return exitCode(s.Stderr, (&FetchCmd{Args: call.Args, GitArgs: call.Options}).Run(in))
	case call.Push():
		return exitCode(s.Stderr, shimPush(in, call))
	}
	return exitCode(s.Stderr, (&UpdateRefCmd{Args: call.Args, GitArgs: call.Options}).Run(in))
}

// shimPush runs the shim's `git push` with git's semantics in refretry's push engine:
// the arguments are git's alone (refretry push's own options, --rebase and the rest,
// are not read: git refuses them, as it would), the push is atomic only if the caller
// said --atomic, and a push that lost a race is rebased only when the job opted in
// (REFRETRY_PUSH_REBASE, refretry.pushRebase: settings.PushRebase, read once something
// failed) and it can be rebased safely (package push).
func shimPush(in *invocation, call shim.Call) error {
	if err := in.check(); err != nil {
		return err
	}
	return runPush(in, in.log("push"), &push.Runner{NoAtomic: true, GlobalArgs: call.Options}, call.Args)
}
