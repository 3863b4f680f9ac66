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
	"slices"
	"strings"

	"github.com/refretry/refretry/failure"
	"github.com/refretry/refretry/internal/gitexec"
	"github.com/refretry/refretry/internal/report"
	"github.com/refretry/refretry/internal/shim"
)

// exitUsage is the exit code of a command-line mistake, as git's parse-options.
const exitUsage = 129

// CLI is refretry's grammar: its options, then a command, each with one Run method.
// The arguments of update-ref, push and fetch are git's, verbatim (push takes its
// own options out of them: gitArgs); the other commands' are kong's.
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
	at, word, complete := split(args)
	if word != "" && word != "update-ref" {
		// Any command but update-ref may wait: signals are caught from the moment the
		// command is known, before anything else is done (signals.go).
		catchSignals(arm)
	}
	in := &invocation{ctx: ctx, arm: arm, opts: &Options{}, env: env, s: s}
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

// split finds where refretry's own options end in args, by their spellings in the
// grammar (grammarIndex): at is the first argument that is neither one of them nor
// an option's value, word the command it names ("" for none: the default command's
// arguments start there), and complete is false when the last option lacks its
// value. It reads no value: kong does (kong.go), except on the plain path, where
// there is none to read.
func split(args []string) (at int, word string, complete bool) {
	for at < len(args) {
		n := ownOption(args[at])
		if n == 0 {
			break
		}
		if at+n > len(args) {
			return len(args), "", false
		}
		at += n
	}
	if at < len(args) && slices.Contains(grammarIndex.commands, args[at]) {
		word = args[at]
	}
	return at, word, true
}

// ownOption is how many arguments refretry's option a takes with it (1 or 2), 0 when
// a is not one of refretry's options: --name, --name=value, --name value, -X value,
// -Xvalue. A switch given a value (--coalesce=1) is not refretry's spelling: it is
// update-ref's (git rejects it).
func ownOption(a string) int {
	name, _, hasValue := strings.Cut(a, "=")
	switch {
	case slices.Contains(grammarIndex.switches, a):
		return 1
	case !slices.Contains(grammarIndex.valued, name) && (len(a) < 3 || !slices.Contains(grammarIndex.valued, a[:2])):
		return 0
	case strings.HasPrefix(a, "--") && hasValue, !strings.HasPrefix(a, "--") && len(a) > 2:
		return 1
	}
	return 2
}

// ended reports the end of a command's run to lg and returns its outcome: its exit
// code (failure.ExitCode: 127 when git could not be started).
func ended(lg *report.Log, code int, err error, refs func() report.Refs) error {
	code = failure.ExitCode(code, err)
	lg.Finish(code, err, refs) // refretry's line about a failure, and the summary when logging
	if code != 0 {
		return exitError(code)
	}
	return nil
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
