// Package cli is refretry's command line: its grammar, kong's (options.go, and CLI
// below), one file per command, and the invocation every command
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

// CLI is refretry's grammar: its options, then a command, each with one Run method.
// The arguments of update-ref, push and fetch are git's, verbatim (push takes its
// own options out of them: pushArgs); the other commands' are kong's.
type CLI struct {
	Help helpFlag `name:"help" help:"Show context-sensitive help."`
	Options

	UpdateRef UpdateRefCmd `cmd:"" name:"update-ref" default:"withargs" passthrough:"" help:"Run git update-ref with these arguments, retrying lock contention (the default command: refretry [options] <git update-ref arguments>)."`
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

// exitError ends a command with a code whose message, if any, has been printed.
type exitError int

func (e exitError) Error() string { return fmt.Sprintf("exit %d", int(e)) }

// Main is refretry's main: argv and environ as the process got them. Started under
// the name git, it is the shim (shim.go).
func Main(ctx context.Context, argv []string, s Streams, env []string) int {
	if len(argv) > 0 && shim.Invoked(argv[0]) {
		self, _ := os.Executable()
		return RunAsGit(ctx, argv[1:], s, env, self, shim.Exec)
	}
	return Run(ctx, argv[1:], s, env)
}

// Run is refretry without the process around it: Main and the tests call it.
func Run(ctx context.Context, args []string, s Streams, env []string) int {
	// The git shim, if it is on PATH, hands refretry's own git calls straight to the
	// real git (shim.go).
	env = gitexec.Setenv(env, shim.BypassVar, "1")
	at, word, complete := split(args)
	if word != "" && word != "update-ref" {
		// Any command but update-ref may wait: signals are caught from the moment the
		// command is known, before anything else is done (signals.go).
		arm(ctx)
	}
	in := &invocation{ctx: ctx, opts: &Options{}, env: env, s: s}
	if at == 0 && (word == "" || word == "update-ref") {
		// The plain update: no option of refretry's, so kong, which costs more to
		// start than the rest of refretry (docs/benchmarks.md), is not built.
		if word != "" {
			args = args[1:]
		}
		return exitCode(s.Stderr, (&UpdateRefCmd{Args: args}).Run(in))
	}
	return runKong(in, args, at, word, complete)
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
