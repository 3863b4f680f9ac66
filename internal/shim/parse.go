package shim

import (
	"slices"
	"strings"
)

// Call is a git command line as git's handle_options reads it (git 2.55, git.c): the
// global options, then the subcommand and its arguments.
type Call struct {
	// Dirs are the -C directories, in order (an empty one is kept: git ignores it).
	Dirs []string
	// Options are the other global options, verbatim and in order, each with its value
	// as a separate argument when it was given that way.
	Options []string
	// GitDir is the value of the last --git-dir, which git puts into GIT_DIR before
	// anything else reads it; HasGitDir says whether there was one.
	GitDir    string
	HasGitDir bool
	// Command is the subcommand and Args its arguments (nil when there is no command;
	// an empty argument in its place is a command git does not know).
	Command string
	Args    []string
}

// UpdateRef reports whether the call is `git update-ref` with global options whose
// meaning survives being passed on to the real git after the -C directories. When
// false, the call must go to the real git as it is.
func (c Call) UpdateRef() bool { return c.Command == "update-ref" }

// Fetch reports whether the call is a `git fetch` that refretry runs (package fetch).
// `git fetch --help` opens a manual page, which wants git's own terminal: it goes to
// the real git.
func (c Call) Fetch() bool {
	if c.Command != "fetch" {
		return false
	}
	for _, a := range c.Args {
		if a == "--" {
			break
		}
		if a == "--help" {
			return false
		}
	}
	return true
}

// Push reports whether the call is a `git push` that refretry runs (package push,
// with git's own semantics: not atomic unless the caller says --atomic, git's output
// and exit code). -h, --help and --help-all before "--" (git's usage and manual page)
// go to the real git.
func (c Call) Push() bool {
	if c.Command != "push" {
		return false
	}
	for _, a := range c.Args {
		if a == "--" {
			break
		}
		if a == "-h" || a == "--help" || a == "--help-all" {
			return false
		}
	}
	return true
}

// Parse reads args (git's arguments, without argv[0]) as git 2.55's handle_options
// does. ok is false for anything refretry should not interpret: an option git does
// not know (git prints its usage), a missing value, the options that print something
// and exit (--exec-path without a value, --html-path, --man-path, --info-path,
// --list-cmds=), and --bare followed by a -C (git takes the directory --bare names
// when it reads it, before the later -C; passing the options on with the -C
// directories first would change that). -h, --help, -v and --version end the options,
// as in git, and become the command.
func Parse(args []string) (c Call, ok bool) {
	bare := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			c.Command, c.Args = a, args[i+1:]
			return c, true
		}
		// value returns the next argument, for the options that take one there.
		value := func() (string, bool) {
			if i+1 >= len(args) {
				return "", false
			}
			i++
			return args[i], true
		}
		switch {
		case a == "--help" || a == "-h" || a == "--version" || a == "-v":
			c.Command, c.Args = a, args[i+1:]
			return c, true
		case a == "-C":
			d, ok := value()
			if !ok || bare {
				return c, false
			}
			c.Dirs = append(c.Dirs, d)
		case a == "--git-dir":
			d, ok := value()
			if !ok {
				return c, false
			}
			c.GitDir, c.HasGitDir = d, true
			c.Options = append(c.Options, a, d)
		case strings.HasPrefix(a, "--git-dir="):
			c.GitDir, c.HasGitDir = a[len("--git-dir="):], true
			c.Options = append(c.Options, a)
		case a == "--namespace" || a == "--work-tree" || a == "-c" || a == "--config-env" ||
			a == "--attr-source" || a == "--shallow-file":
			v, ok := value()
			if !ok {
				return c, false
			}
			c.Options = append(c.Options, a, v)
		case strings.HasPrefix(a, "--namespace="), strings.HasPrefix(a, "--work-tree="),
			strings.HasPrefix(a, "--config-env="), strings.HasPrefix(a, "--attr-source="),
			strings.HasPrefix(a, "--exec-path="):
			c.Options = append(c.Options, a)
		case a == "--bare":
			bare = true
			c.Options = append(c.Options, a)
		case slices.Contains(flagOptions, a):
			c.Options = append(c.Options, a)
		default:
			// Unknown, or one that prints and exits: git decides.
			return c, false
		}
	}
	return c, true // no command: git prints its usage
}

// flagOptions are git's global options that take no value and only set something for
// the command that follows.
// (A slice, not a map: a package-level map is built at the start of every refretry
// process, whatever its command.)
var flagOptions = []string{
	"-p", "--paginate", "-P", "--no-pager",
	"--no-lazy-fetch", "--no-replace-objects",
	"--literal-pathspecs", "--no-literal-pathspecs",
	"--glob-pathspecs", "--noglob-pathspecs", "--icase-pathspecs",
	"--no-optional-locks", "--no-advice",
}
