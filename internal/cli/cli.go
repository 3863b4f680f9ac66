// Package cli is refretry's command line: its grammar (options.go), one file per
// command, and the invocation every command reads its settings from. The commands
// run their work through the library packages (transaction, push) and report through
// internal/report; nothing here is imported by them.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/alecthomas/kong"

	"github.com/refretry/refretry/internal/gitexec"
	"github.com/refretry/refretry/internal/report"
	"github.com/refretry/refretry/internal/shim"
)

// exitUsage is the exit code of a command-line mistake, as git's parse-options.
const exitUsage = 129

// CLI is refretry's grammar: its options, then a command. Arguments after the command
// word (or after refretry's options, for the default command) are the command's and
// go to git verbatim; kong never sees them.
type CLI struct {
	Options

	UpdateRef UpdateRefCmd `cmd:"" name:"update-ref" default:"1" help:"Run git update-ref with these arguments, retrying lock contention (the default command: refretry [options] <git update-ref arguments>)."`
	Push      PushCmd      `cmd:"" help:"Run git push with these arguments, atomically unless --no-atomic, retrying remote lock contention and transport failures."`
	Fetch     FetchCmd     `cmd:"" help:"Run git fetch with these arguments, retrying local lock contention, refs moved by a concurrent fetch, and transport failures."`
	Version   VersionCmd   `cmd:"" help:"Print refretry's version."`
	Shim      ShimCmd      `cmd:"" help:"Install or remove the git shim: refretry under the name git, so that unchanged tools get it for git update-ref."`
	Gather    GatherCmd    `cmd:"" help:"List, land or discard the commits push --gather staged on a remote."`
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
	own, cmdWord, rest := splitArgs(args)
	if cmdWord == "" || cmdWord == "update-ref" {
		// The plain path: no kong for the shapes fastOptions reads as kong would
		// (options.go). --help and anything odd still go to kong.
		if opts, ok := fastOptions(own); ok {
			in := &invocation{ctx: ctx, opts: opts, env: env, s: s}
			return exitCode(s.Stderr, (&UpdateRefCmd{Args: rest}).Run(in))
		}
	}
	var cli CLI
	in := &invocation{ctx: ctx, opts: &cli.Options, env: env, s: s}
	exited := -1
	parser, err := kong.New(&cli,
		kong.Name("refretry"),
		kong.Description("A drop-in git update-ref that retries lock contention, and only that."),
		kong.Writers(s.Stdout, s.Stderr),
		kong.Help(help),
		kong.Exit(func(code int) { exited = code }),
		kong.PostBuild(func(k *kong.Kong) error {
			// -h is git update-ref's (its usage, exit 129); refretry's help is --help.
			if k.Model.HelpFlag != nil {
				k.Model.HelpFlag.Short = 0
			}
			return describe(k)
		}),
		kong.Bind(in),
	)
	if err != nil {
		fmt.Fprintf(s.Stderr, "refretry: %v\n", err)
		return report.ExitFatal
	}
	kargs := own
	if cmdWord != "" {
		kargs = append(kargs, cmdWord)
	}
	switch {
	case cmdWord == "shim" || cmdWord == "gather": // their arguments are kong's
		kargs, rest = append(kargs, rest...), nil
	case (cmdWord == "push" || cmdWord == "fetch") && slices.Contains(beforeDashDash(rest), "--help"):
		kargs = append(kargs, "--help")
	}
	kctx, err := parser.Parse(kargs)
	if exited >= 0 { // --help
		return exited
	}
	if err != nil {
		fmt.Fprintf(s.Stderr, "refretry: %v\n", err)
		return exitUsage
	}
	if kctx.Command() == "version" && len(rest) > 0 {
		fmt.Fprintf(s.Stderr, "refretry: version takes no arguments\n")
		return exitUsage
	}
	cli.UpdateRef.Args = rest
	cli.Push.Args = rest
	cli.Fetch.Args = rest
	return exitCode(s.Stderr, kctx.Run())
}

// usage is refretry's forms, at the top of its --help: the arguments of update-ref,
// push and fetch are git's, which kong's own usage line cannot say.
const usage = `Usage: refretry [options] <git update-ref arguments>
       refretry [options] update-ref <git update-ref arguments>
       refretry [options] push [--no-atomic] [--rebase] [--regenerate COMMAND] <git push arguments>
       refretry [options] push --gather [--gather-max N] <remote> [<src>:]<branch>
       refretry [options] gather list|land|discard <remote> <branch> [<id>...]
       refretry [options] fetch <git fetch arguments>
       refretry version
       refretry shim install|uninstall [--dir DIR]
`

// help prints --help: refretry's forms, then kong's description of the options and
// commands; a command's help is kong's alone.
func help(options kong.HelpOptions, ctx *kong.Context) error {
	if ctx.Selected() == nil {
		if _, err := io.WriteString(ctx.Stdout, usage); err != nil {
			return err
		}
		options.NoAppSummary = true
	}
	return kong.DefaultHelpPrinter(options, ctx)
}

// beforeDashDash is args up to a "--".
func beforeDashDash(args []string) []string {
	if i := slices.Index(args, "--"); i >= 0 {
		return args[:i]
	}
	return args
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
