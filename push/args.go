package push

import (
	"strings"

	"github.com/refretry/refretry/internal/gitopts"
)

// Args is what the package needs to know about the caller's git push arguments. They
// are passed to git verbatim; Args only reads them.
type Args struct {
	Raw []string
	// Remote is the <repository> argument (or --repo's value); "" when git push is to
	// pick the remote itself.
	Remote string
	// Porcelain, Quiet and Verbose are the caller's own output options.
	Porcelain bool
	Quiet     bool
	Verbose   bool
	// Progress records --progress or --no-progress given by the caller (the last one
	// wins); nil when neither was.
	Progress *bool
	// Atomic records --atomic or --no-atomic given by the caller (the last one wins);
	// nil when neither was.
	Atomic *bool
	// Usage is set when the arguments ask git push for its usage (-h, -vh,
	// --help-all: gitopts.Command.AsksUsage): git then pushes nothing, and its answer,
	// stream and exit code, is the running git's (129 up to git 2.55, 0 since 2.56).
	Usage bool
}

// remoteOr is where the push goes: the remote its arguments name, else url, the
// remote's URL as git reported it.
func (a Args) remoteOr(url string) string {
	if a.Remote != "" {
		return a.Remote
	}
	return url
}

// gitPush is git push's options (git 2.39 to 2.55).
var gitPush = gitopts.Command{ShortValues: "o", ShortFlags: "vqdnfu46",
	Flags: []string{
		"verbose", "quiet", "all", "branches", "mirror", "delete", "tags", "dry-run", "porcelain", "force",
		"force-with-lease", "force-if-includes", "thin", "set-upstream", "progress", "prune", "no-verify",
		"follow-tags", "signed", "atomic", "ipv4", "ipv6",
	},
	Values: []string{
		"repo", "recurse-submodules", "receive-pack", "exec", "push-option",
	},
}

// TakesNextArg reports whether git push reads the argument after arg as arg's value:
// -o, a cluster of short options that ends in o (-fo <value>), and --push-option,
// --repo, --receive-pack, --exec and --recurse-submodules (or a prefix git accepts for
// one: --push-opt) given without "=".
func TakesNextArg(arg string) bool { return gitPush.TakesNext(arg) }

// ParseArgs reads git push arguments as far as the package needs them. Options are
// read wherever they appear before "--" (git push origin main --porcelain), as git's
// parser reads them.
func ParseArgs(args []string) Args {
	a := Args{Raw: args, Usage: gitPush.AsksUsage(args)}
	set := func(v bool) { a.Atomic = &v }
	positional, repo := false, "" // the repository argument was read; --repo's value
	for i := 0; i < len(args); i++ {
		arg := args[i]
		if arg == "--" {
			if i+1 < len(args) && !positional {
				a.Remote, positional = args[i+1], true
			}
			break
		}
		if !strings.HasPrefix(arg, "-") || arg == "-" {
			if !positional {
				a.Remote, positional = arg, true
			}
			continue // a refspec; git's parser reads options after them too
		}
		if flags := gitPush.Shorts(arg); flags != "" {
			a.Quiet = a.Quiet || strings.Contains(flags, "q")
			a.Verbose = a.Verbose || strings.Contains(flags, "v")
			if TakesNextArg(arg) {
				i++
			}
			continue
		}
		name, negated, _ := gitPush.Option(arg)
		_, value, hasValue := strings.Cut(arg, "=")
		switch {
		case name == "repo" && !negated && hasValue:
			repo = value
		case TakesNextArg(arg):
			if name == "repo" && i+1 < len(args) {
				repo = args[i+1]
			}
			i++
		case name == "porcelain":
			a.Porcelain = !negated
		case name == "atomic":
			set(!negated)
		case name == "progress":
			v := !negated
			a.Progress = &v
		case name == "quiet":
			a.Quiet = !negated
		case name == "verbose":
			a.Verbose = !negated
		}
	}
	if !positional {
		a.Remote = repo // git push takes --repo only when no repository is named
	}
	return a
}

// Target is the arguments of a push that lands one source on one branch, as
// `refretry push --gather` and `refretry push --api` take them: git push's options
// (each with its value), then <remote> and one [+][<src>:]<branch>.
type Target struct {
	Options []string // git push options, each with its value
	Remote  string   // a name or a URL, as git push takes it
	Source  string   // a commit, a branch, "HEAD" (when not given)
	Branch  string   // "main": a branch named in full is under refs/heads/
}

// TargetError is arguments ReadTarget cannot take.
type TargetError struct {
	// Arg is the operand that is not [<src>:]<branch>; "" when the operands are not
	// two.
	Arg string
}

func (e *TargetError) Error() string {
	if e.Arg == "" {
		return "takes <remote> [<src>:]<branch>, one branch"
	}
	return e.Arg + " is not [<src>:]<branch>"
}

// ReadTarget reads git push arguments as a Target: options anywhere before "--" (with
// the value of one that takes the next argument, as git push reads it: TakesNextArg),
// and two operands, <remote> and [+][<src>:]<branch>. Anything else is a
// *TargetError.
func ReadTarget(args []string) (Target, error) {
	var t Target
	var operands []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			operands = append(operands, args[i+1:]...)
			i = len(args)
		case strings.HasPrefix(a, "-") && a != "-":
			t.Options = append(t.Options, a)
			if TakesNextArg(a) && i+1 < len(args) {
				i++
				t.Options = append(t.Options, args[i])
			}
		default:
			operands = append(operands, a)
		}
	}
	if len(operands) != 2 {
		return Target{}, &TargetError{}
	}
	t.Remote = operands[0]
	src, branch, ok := strings.Cut(strings.TrimPrefix(operands[1], "+"), ":")
	if !ok {
		src, branch = "HEAD", src
	}
	if src == "" || branch == "" || strings.HasPrefix(branch, "refs/") && !strings.HasPrefix(branch, "refs/heads/") {
		return Target{}, &TargetError{Arg: operands[1]}
	}
	t.Source, t.Branch = src, strings.TrimPrefix(branch, "refs/heads/")
	return t, nil
}
