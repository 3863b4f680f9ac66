package transaction

import "strings"

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

type longOpt struct {
	name string
	set  func(a *Args)
}

// longOpts lists every spelling of update-ref's long options that git's parser accepts
// in full, with its effect. Unambiguous prefixes of these are accepted too.
var longOpts = []longOpt{
	{"stdin", func(a *Args) { a.Stdin = true }},
	{"no-stdin", func(a *Args) { a.Stdin = false }},
	{"batch-updates", func(a *Args) { a.Batch = true }},
	{"no-batch-updates", func(a *Args) { a.Batch = false }},
	{"create-reflog", func(*Args) {}},
	{"no-create-reflog", func(*Args) {}},
	{"no-deref", func(*Args) {}},
	{"deref", func(*Args) {}},
}

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
			name := arg[2:]
			if strings.Contains(name, "=") {
				// None of update-ref's long options takes a value.
				a.Understood = false
				return a
			}
			opt, ok := matchLong(name)
			if !ok {
				a.Understood = false
				return a
			}
			opt.set(&a)
		case len(arg) > 1 && arg[0] == '-':
			for j := 1; j < len(arg); j++ {
				switch arg[j] {
				case 'd':
					a.Delete = true
				case 'z':
					a.NUL = true
				case '0':
					a.Batch = true
				case 'm':
					if j == len(arg)-1 {
						i++ // the value is the next argument
						if i == len(raw) {
							a.Understood = false
							return a
						}
					}
					j = len(arg) // the rest of this argument is the value
				default: // -h and anything unknown
					a.Understood = false
					return a
				}
			}
		}
	}
	return a
}

// matchLong finds the long option that name spells, exactly or as an unambiguous prefix.
func matchLong(name string) (longOpt, bool) {
	var found []longOpt
	for _, o := range longOpts {
		if o.name == name {
			return o, true
		}
		if name != "" && strings.HasPrefix(o.name, name) {
			found = append(found, o)
		}
	}
	if len(found) != 1 {
		return longOpt{}, false
	}
	return found[0], true
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
		case a == "-m":
			i++ // its value
		case strings.HasPrefix(a, "-") && len(a) > 1:
			if j := strings.IndexByte(a, 'm'); j > 0 && !strings.HasPrefix(a, "--") && j == len(a)-1 {
				i++ // a bundle ending in -m: the value is the next argument
			}
		default:
			return a
		}
	}
	return ""
}
