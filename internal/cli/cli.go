// Package cli is refretry's command line: its grammar (options.go, and CLI below),
// its one reader (line.go), one file per command, and the invocation every command
// reads its settings from. The commands run their work through the library packages
// (transaction, push) and report through internal/report; nothing here is imported by
// them.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/refretry/refretry/internal/gitexec"
	"github.com/refretry/refretry/internal/report"
	"github.com/refretry/refretry/internal/shim"
)

// exitUsage is the exit code of a command-line mistake, as git's parse-options.
const exitUsage = 129

// CLI is refretry's grammar: its options, then a command. The command list, each
// command's word (its name tag, which kong reads too), and how each takes its
// arguments are read from here (command.go): a command with a field Args []string
// `kong:"-"` gets the arguments after its word (or after refretry's options, for the
// default command) verbatim, for git; kong never sees them.
type CLI struct {
	Options

	UpdateRef UpdateRefCmd `cmd:"" name:"update-ref" default:"1" help:"Run git update-ref with these arguments, retrying lock contention (the default command: refretry [options] <git update-ref arguments>)."`
	Push      PushCmd      `cmd:"" name:"push" help:"Run git push with these arguments, atomically unless --no-atomic, retrying remote lock contention and transport failures."`
	Fetch     FetchCmd     `cmd:"" name:"fetch" help:"Run git fetch with these arguments, retrying local lock contention, refs moved by a concurrent fetch, and transport failures."`
	Version   VersionCmd   `cmd:"" name:"version" help:"Print refretry's version."`
	Shim      ShimCmd      `cmd:"" name:"shim" help:"Install or remove the git shim: refretry under the name git, so that unchanged tools get it for git update-ref."`
	Gather    GatherCmd    `cmd:"" name:"gather" help:"List, land or discard the commits push --gather staged on a remote."`
}

// Streams are the caller's standard streams.
type Streams struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
}

// usageError is a command-line mistake: exit 129.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

// notPositive is the usage error of a duration option given zero, a negative or an
// unreadable value: cmd's option flag, and the value as given.
func notPositive(cmd, flag, value string) *usageError {
	return &usageError{msg: fmt.Sprintf("%s: %s needs a positive duration (30s, 2m), not %q", cmd, flag, value)}
}

// exitError ends a command with a code whose message, if any, has been printed.
type exitError int

func (e exitError) Error() string { return fmt.Sprintf("exit %d", int(e)) }

// Main is refretry's main: argv and environ as the process got them, and arm, which
// starts catching signals (Signals.Arm). Started under the name git, it is the shim
// (shim.go).
func Main(ctx context.Context, arm func(), argv []string, s Streams, env []string) int {
	if len(argv) > 0 && shim.Invoked(argv[0]) {
		self, _ := os.Executable()
		return RunAsGit(ctx, arm, argv[1:], s, env, self, shim.Exec)
	}
	return runWithSignals(ctx, arm, argv[1:], s, env)
}

// Run is refretry without the process around it, catching no signals: the tests
// call it.
func Run(ctx context.Context, args []string, s Streams, env []string) int {
	return runWithSignals(ctx, nil, args, s, env)
}

// runWithSignals is Run with arm, which starts catching signals (nil: never).
func runWithSignals(ctx context.Context, arm func(), args []string, s Streams, env []string) int {
	// The git shim, if it is on PATH, hands refretry's own git calls straight to the
	// real git (shim.go).
	env = gitexec.Setenv(env, shim.BypassVar, "1")
	l := readLine(args)
	if !l.cmd.isDefault {
		// Any command but update-ref may wait: signals are caught from the moment the
		// command is known, before anything else is done (signals.go).
		catchSignals(arm)
	}
	in := &invocation{ctx: ctx, arm: arm, opts: &Options{Dirs: l.dirs}, flags: l.flags, env: env, s: s}
	if run, ok := l.cmd.direct(l.rest); ok && l.read {
		// The plain path, and every command whose arguments kong does not read: no kong
		// (line.go).
		return exitCode(s.Stderr, run(in))
	}
	return runKong(in, l)
}

// exitCode prints a command's error, if it needs printing, and picks the exit code.
func exitCode(stderr io.Writer, err error) int {
	var code exitError
	var u *usageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &code):
		return int(code)
	case errors.As(err, &u):
		fmt.Fprintf(stderr, "refretry: %v\n", err)
		return exitUsage
	}
	fmt.Fprintf(stderr, "refretry: %v\n", err)
	return report.ExitFatal
}
