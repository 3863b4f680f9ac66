package push

import "strings"

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
	// Atomic records --atomic or --no-atomic given by the caller (the last one wins);
	// nil when neither was.
	Atomic *bool
}

// gitPushLong is git push's long options (git 2.39 to 2.55), each with whether it
// takes a value from the next argument when none is given with "=".
var gitPushLong = map[string]bool{
	"verbose": false, "quiet": false, "repo": true, "all": false, "branches": false, "mirror": false,
	"delete": false, "tags": false, "dry-run": false, "porcelain": false, "force": false,
	"force-with-lease": false, "force-if-includes": false, "recurse-submodules": true, "thin": false,
	"receive-pack": true, "exec": true, "set-upstream": false, "progress": false, "prune": false,
	"no-verify": false, "verify": false, "follow-tags": false, "signed": false, "atomic": false,
	"push-option": true, "ipv4": false, "ipv6": false,
}

// longOption reads a long option as git's option parser does: the full name of the
// option arg names (exactly, or by the one option its prefix fits: --push-opt), and
// whether it is negated (--no-<name>). ok is false when arg is not a long option of
// git push, or is a prefix of more than one.
func longOption(arg string) (name string, negated, ok bool) {
	body, found := strings.CutPrefix(arg, "--")
	body, _, _ = strings.Cut(body, "=")
	if !found || body == "" {
		return "", false, false
	}
	if _, exact := gitPushLong[body]; exact {
		return body, false, true
	}
	positive, isNo := strings.CutPrefix(body, "no-")
	if _, exact := gitPushLong[positive]; isNo && exact {
		return positive, true, true
	}
	matches := 0
	for n := range gitPushLong {
		if strings.HasPrefix(n, body) {
			name, negated, matches = n, false, matches+1
		}
		if isNo && strings.HasPrefix(n, positive) && !strings.HasPrefix(n, "no-") {
			name, negated, matches = n, true, matches+1
		}
	}
	if matches != 1 {
		return "", false, false
	}
	return name, negated, true
}

// TakesNextArg reports whether git push reads the argument after arg as arg's value:
// -o, a cluster of short options that ends in o (-fo <value>), and --push-option,
// --repo, --receive-pack, --exec and --recurse-submodules (or a prefix git accepts for
// one: --push-opt) given without "=".
func TakesNextArg(arg string) bool {
	if flags := shortFlags(arg); flags != "" {
		return len(flags) == len(arg)-1 && strings.HasSuffix(flags, "o")
	}
	if strings.Contains(arg, "=") {
		return false
	}
	name, negated, ok := longOption(arg)
	return ok && !negated && gitPushLong[name]
}

// shortFlags is the option letters of a cluster of short options ("-fu" → "fu"), up
// to the first o, whose value is the rest of the argument or the next one
// ("-fofoo" → "fo"); "" when arg is not one.
func shortFlags(arg string) string {
	if len(arg) < 2 || arg[0] != '-' || arg[1] == '-' {
		return ""
	}
	if i := strings.IndexByte(arg, 'o'); i > 0 {
		return arg[1 : i+1]
	}
	return arg[1:]
}

// ParseArgs reads git push arguments as far as the package needs them.
func ParseArgs(args []string) Args {
	a := Args{Raw: args}
	set := func(v bool) { a.Atomic = &v }
	for i := 0; i < len(args); i++ {
		arg := args[i]
		if arg == "--" {
			if i+1 < len(args) && a.Remote == "" {
				a.Remote = args[i+1]
			}
			break
		}
		if !strings.HasPrefix(arg, "-") || arg == "-" {
			if a.Remote == "" {
				a.Remote = arg
			}
			break // the rest are refspecs
		}
		if flags := shortFlags(arg); flags != "" {
			a.Quiet = a.Quiet || strings.Contains(flags, "q")
			a.Verbose = a.Verbose || strings.Contains(flags, "v")
			if TakesNextArg(arg) {
				i++
			}
			continue
		}
		name, negated, _ := longOption(arg)
		_, value, hasValue := strings.Cut(arg, "=")
		switch {
		case name == "repo" && !negated && hasValue:
			a.Remote = value
		case TakesNextArg(arg):
			if name == "repo" && i+1 < len(args) {
				a.Remote = args[i+1]
			}
			i++
		case name == "porcelain":
			a.Porcelain = !negated
		case name == "atomic":
			set(!negated)
		case name == "quiet":
			a.Quiet = !negated
		case name == "verbose":
			a.Verbose = !negated
		}
	}
	return a
}
