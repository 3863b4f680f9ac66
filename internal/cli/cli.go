package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/alecthomas/kong"

	"github.com/refretry/refretry/internal/shim"
)

// Exit codes of refretry's own failures; git's codes pass through unchanged.
const (
	exitUsage      = 129 // as git's parse-options
	exitFatal      = 128 // as git's die()
	exitGitMissing = 127 // as a shell's "command not found"
)

// Globals are refretry's own options. They come before the update-ref arguments and
// none of them is a spelling update-ref accepts.
type Globals struct {
	Dirs         []string `short:"C" name:"directory" sep:"none" placeholder:"PATH" help:"Run as if started in PATH (repeatable, as git -C)."`
	Git          string   `placeholder:"PATH" help:"git executable to run (env REFRETRY_GIT; default: git on PATH)."`
	Timeout      string   `placeholder:"DURATION" help:"Total retry budget: no attempt starts after it (env REFRETRY_TIMEOUT, config refretry.timeout; default ${timeout})."`
	MaxAttempts  string   `placeholder:"N" help:"Most attempts, the first included; 0 means no cap (env REFRETRY_MAX_ATTEMPTS, config refretry.maxAttempts; default ${attempts})."`
	InitialDelay string   `placeholder:"DURATION" help:"Delay before the first retry, before jitter (env REFRETRY_INITIAL_DELAY, config refretry.initialDelay; default ${initial})."`
	MaxDelay     string   `placeholder:"DURATION" help:"Cap on the delay between attempts (env REFRETRY_MAX_DELAY, config refretry.maxDelay; default ${maxdelay})."`
	StaleAfter   string   `placeholder:"DURATION" help:"A lock older than this is stale: stop at once instead of waiting (env REFRETRY_STALE_AFTER, config refretry.staleAfter; default ${stale})."`
	// --break-stale-locks (breaklock.go in transaction/).
	BreakStaleLocks bool `help:"Remove a lock whose holder is proven dead, or older than --stale-after with no live holder on record, then retry (env REFRETRY_BREAK_STALE_LOCKS=1, config refretry.breakStaleLocks)."`
	// --coalesce (transaction/group.go, docs/coalescing.md).
	Coalesce bool `help:"Let concurrent single-ref updates of one repository be committed together by one git (env REFRETRY_COALESCE=1, config refretry.coalesce; see docs/coalescing.md)."`
	// Logging (logging.go, docs/logging.md).
	LogFormat string `placeholder:"FORMAT" help:"Log format on stderr: auto, text, json, github or gitlab (env REFRETRY_LOG_FORMAT, config refretry.logFormat; default auto: github or gitlab when detected, else refretry's plain lines)."`
	LogFile   string `placeholder:"PATH" help:"Also append JSON lines to PATH (env REFRETRY_LOG_FILE, config refretry.logFile)."`

	config map[string]string // git config as read by readConfig; nil until then
}

// CLI is refretry's grammar. Arguments after refretry's options are update-ref's,
// and are never seen by kong: they go to git verbatim.
type CLI struct {
	Globals

	UpdateRef UpdateRefCmd `cmd:"" name:"update-ref" default:"1" help:"Run git update-ref with these arguments, retrying lock contention (the default command)."`
	Version   VersionCmd   `cmd:"" help:"Print refretry's version."`
	Push      PushCmd      `cmd:"" help:"Run git push (atomic unless --no-atomic; --rebase to rebase onto a moved branch) with these arguments, retrying remote lock contention and transport failures."`
	// The git shim (shim_cmd.go, internal/shim).
	Shim ShimCmd `cmd:"" help:"Install or remove the git shim: refretry under the name git, so that unchanged tools get it for git update-ref."`
}

// env is the caller's environment, as given to run.
type env []string

func (e env) get(key string) string {
	for i := len(e) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(e[i], "="); ok && k == key {
			return v
		}
	}
	return ""
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

// Main is refretry's main: argv and environ as the process got them. Started under
// the name git, it is the shim (shim.go).
func Main(ctx context.Context, argv []string, s Streams, environ []string) int {
	if len(argv) > 0 && shim.Invoked(argv[0]) {
		self, _ := os.Executable()
		return RunAsGit(ctx, argv[1:], s, environ, self, shim.Exec)
	}
	return Run(ctx, argv[1:], s, environ)
}

// Run is refretry without the process around it: Main and the tests call it.
func Run(ctx context.Context, args []string, s Streams, environ []string) int {
	stdin, stdout, stderr := s.Stdin, s.Stdout, s.Stderr
	// The git shim, if it is on PATH, hands refretry's own git calls straight to the
	// real git (shim_cmd.go).
	environ = setEnv(environ, shim.BypassVar, "1")
	own, cmdWord, rest := splitArgs(args)
	if len(own) == 0 && cmdWord == "" {
		// Nothing for kong to parse: every argument is update-ref's. Skipping the
		// parser keeps refretry's start-up cost off every plain call.
		return exitCodeOf(stderr, (&UpdateRefCmd{Args: rest}).Run(ctx, &Globals{}, Streams{stdin, stdout, stderr}, env(environ)))
	}
	if cmdWord == "" || cmdWord == "update-ref" {
		// kong builds its model by reflection on every start, about 1.5 ms of CPU: for
		// an update with refretry options in the well-formed shapes splitArgs already
		// isolated, fill the same Globals directly (TestQuickGlobalsMatchKong holds the
		// two to the same result). --help and anything odd still go to kong.
		if g, ok := quickGlobals(own); ok {
			return exitCodeOf(stderr, (&UpdateRefCmd{Args: rest}).Run(ctx, g, Streams{stdin, stdout, stderr}, env(environ)))
		}
	}
	var cli CLI
	exitCode := -1
	parser, err := kong.New(&cli,
		kong.Name("refretry"),
		kong.Description("A drop-in git update-ref that retries lock contention, and only that.\n\n"+
			"Usage: refretry [options] <git update-ref arguments>\n"+
			"       refretry [options] update-ref <git update-ref arguments>\n"+
			"       refretry [options] push [--no-atomic] [--rebase] <git push arguments>\n"+
			"       refretry version\n"+
			"       refretry shim install|uninstall [--dir DIR]"),
		kong.Writers(stdout, stderr),
		kong.Exit(func(code int) { exitCode = code }),
		// -h is git update-ref's (its usage, exit 129); refretry's help is --help only.
		kong.PostBuild(func(k *kong.Kong) error {
			if k.Model.HelpFlag != nil {
				k.Model.HelpFlag.Short = 0
			}
			return nil
		}),
		kong.Vars(defaultVars()),
		kong.Bind(Streams{stdin, stdout, stderr}, env(environ)),
		kong.BindTo(ctx, (*context.Context)(nil)),
	)
	if err != nil {
		fmt.Fprintf(stderr, "refretry: %v\n", err)
		return exitFatal
	}
	kargs := own
	if cmdWord != "" {
		kargs = append(kargs, cmdWord)
	}
	if cmdWord == "shim" { // its arguments are kong's
		kargs, rest = append(kargs, rest...), nil
	}
	kctx, err := parser.Parse(kargs)
	if exitCode >= 0 { // --help
		return exitCode
	}
	if err != nil {
		fmt.Fprintf(stderr, "refretry: %v\n", err)
		return exitUsage
	}
	if kctx.Command() == "version" && len(rest) > 0 {
		fmt.Fprintf(stderr, "refretry: version takes no arguments\n")
		return exitUsage
	}
	cli.UpdateRef.Args = rest
	cli.Push.Args = rest
	return exitCodeOf(stderr, kctx.Run(&cli.Globals))
}

// exitCodeOf prints a command's error, if it needs printing, and picks the exit code.
func exitCodeOf(stderr io.Writer, err error) int {
	if err != nil {
		var code exitCoder
		if errors.As(err, &code) {
			return code.ExitCode()
		}
		var u *usageError
		if errors.As(err, &u) {
			fmt.Fprintf(stderr, "refretry: %v\n", err)
			return exitUsage
		}
		fmt.Fprintf(stderr, "refretry: %v\n", err)
		return exitFatal
	}
	return 0
}

// exitCoder is an error that carries the exit code to use (its message, if any, has
// already been printed).
type exitCoder interface{ ExitCode() int }

type exitError int

func (e exitError) Error() string { return fmt.Sprintf("exit %d", int(e)) }
func (e exitError) ExitCode() int { return int(e) }

// ownOptions are refretry's options that take a value, by their spellings.
var ownOptions = map[string]bool{
	"-C": true, "--directory": true, "--git": true, "--timeout": true, "--max-attempts": true,
	"--initial-delay": true, "--max-delay": true, "--stale-after": true,
	"--log-format": true, "--log-file": true,
}

// quickGlobals fills Globals from own (as splitArgs returns it) without kong, when
// every option is one of refretry's in a form kong would read the same way. ok is false
// for --help, a missing value, or anything else kong should judge.
func quickGlobals(own []string) (g *Globals, ok bool) {
	g = &Globals{}
	for i := 0; i < len(own); i++ {
		name, value, hasValue := strings.Cut(own[i], "=")
		switch name {
		case "--break-stale-locks", "--coalesce":
			if hasValue {
				return nil, false
			}
			if name == "--coalesce" {
				g.Coalesce = true
			} else {
				g.BreakStaleLocks = true
			}
			continue
		case "-C":
			hasValue = false // -C takes the next argument, whatever it looks like
			name = own[i]
		}
		if !ownOptions[name] {
			return nil, false
		}
		if !hasValue {
			if i+1 >= len(own) || strings.HasPrefix(own[i+1], "-") && own[i+1] != "-" {
				return nil, false // kong decides what a value that looks like an option is
			}
			i++
			value = own[i]
		}
		switch name {
		case "-C", "--directory":
			g.Dirs = append(g.Dirs, value)
		case "--git":
			g.Git = value
		case "--timeout":
			g.Timeout = value
		case "--max-attempts":
			g.MaxAttempts = value
		case "--initial-delay":
			g.InitialDelay = value
		case "--max-delay":
			g.MaxDelay = value
		case "--stale-after":
			g.StaleAfter = value
		case "--log-format":
			g.LogFormat = value
		case "--log-file":
			g.LogFile = value
		default:
			return nil, false
		}
	}
	return g, true
}

// splitArgs separates refretry's own options (which come first), the optional command
// word, and the update-ref arguments (everything from the first other argument on).
func splitArgs(args []string) (own []string, cmdWord string, rest []string) {
	i := 0
	for i < len(args) {
		a := args[i]
		name, _, hasValue := strings.Cut(a, "=")
		switch {
		case a == "--help", a == "--break-stale-locks", a == "--coalesce":
			own = append(own, a)
			i++
			continue
		case strings.HasPrefix(a, "-C") && len(a) > 2:
			own = append(own, "-C", a[2:])
			i++
			continue
		case ownOptions[name] && strings.HasPrefix(a, "--") && hasValue:
			own = append(own, a)
			i++
			continue
		case ownOptions[a] && i+1 < len(args):
			own = append(own, a, args[i+1])
			i += 2
			continue
		case ownOptions[a]:
			own = append(own, a) // kong reports the missing value
			i++
			continue
		}
		break
	}
	if i < len(args) && (args[i] == "update-ref" || args[i] == "version" || args[i] == "push" || args[i] == "shim") {
		cmdWord = args[i]
		i++
	}
	return own, cmdWord, args[i:]
}
