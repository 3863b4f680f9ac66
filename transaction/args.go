package transaction

import (
	"strings"

	"github.com/refretry/refretry/internal/gitopts"
)

// Args is what refretry needs to know about a `git update-ref` command line. It is
// never used to rebuild the command: git always receives the caller's arguments
// verbatim, so its parser stays the only authority on their meaning.
type Args struct {
	// Raw holds the arguments exactly as given.
	Raw []string
	// Understood is false when the arguments could not be read with certainty (an
	// unknown or ambiguous option, -h, or no arguments). git is then run once,
	// unwrapped, and decides for itself.
	Understood bool
	Stdin      bool // --stdin
	NUL        bool // -z
	Delete     bool // -d
	Batch      bool // --batch-updates or -0
}

// gitUpdateRef is update-ref's options (git 2.39 to 2.55; --batch-updates and -0 are
// 2.50's), as git's option table spells them: git's own rules give each its
// spellings, negations and unambiguous prefixes (--std, --deref, --no-d).
var gitUpdateRef = gitopts.Command{ShortValues: "m", Flags: []string{"no-deref", "stdin", "create-reflog", "batch-updates"}}

// ParseArgs reads an update-ref command line the way git's parse-options does for
// update-ref's option set: options and operands in any order, bundled short options,
// -m with its value attached or separate, long options negated with no- or
// abbreviated to an unambiguous prefix, and -- or --end-of-options ending the options.
func ParseArgs(raw []string) Args {
	a := Args{Raw: raw, Understood: true}
	if len(raw) == 0 {
		a.Understood = false
		return a
	}
	for i := 0; i < len(raw); i++ {
		arg := raw[i]
		switch {
		case arg == "--" || arg == "--end-of-options":
			return a
		case strings.HasPrefix(arg, "--"):
			name, negated, ok := gitUpdateRef.Option(arg)
			if !ok || strings.Contains(arg, "=") { // none of update-ref's long options takes a value
				a.Understood = false
				return a
			}
			switch name {
			case "stdin":
				a.Stdin = !negated
			case "batch-updates":
				a.Batch = !negated
			}
		default:
			for _, c := range gitUpdateRef.Shorts(arg) {
				switch c {
				case 'd':
					a.Delete = true
				case 'z':
					a.NUL = true
				case '0':
					a.Batch = true
				case 'm': // its value is the rest of arg, or the next argument
				default: // -h and anything unknown
					a.Understood = false
					return a
				}
			}
			if gitUpdateRef.TakesNext(arg) {
				if i++; i == len(raw) {
					a.Understood = false // -m without its value
					return a
				}
			}
		}
	}
	return a
}

// Ref is the ref a one-ref or -d command line names: its first operand; "" when there
// is none.
func (a Args) Ref() string {
	raw := a.Raw
	for i := 0; i < len(raw); i++ {
		a := raw[i]
		switch {
		case a == "--" || a == "--end-of-options":
			if i+1 < len(raw) {
				return raw[i+1]
			}
			return ""
		case gitUpdateRef.TakesNext(a):
			i++ // -m, or a bundle ending in it: its value is the next argument
		case strings.HasPrefix(a, "-") && len(a) > 1:
		default:
			return a
		}
	}
	return ""
}
