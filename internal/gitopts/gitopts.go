// Package gitopts reads a git command's arguments the way git's option parser does,
// as far as refretry needs to: which long option an argument names (by its full name,
// or by a prefix that fits only one option), whether it is negated (--no-<name>), the
// letters of a cluster of short options (-fq), and whether the next argument is an
// option's value (-o <value>, -fo <value>, --push-opt <value>).
package gitopts

import (
	"slices"
	"strings"
)

// Command is one git command's options.
type Command struct {
	// Flags and Values are the long options' names, as git's option table spells
	// them ("stdin", "no-deref"): Values those that take their value from the next
	// argument when none is given with "=", Flags the others. Options git hides from
	// -h count too: a prefix must fit exactly one of all of them. Every option is
	// taken to be negatable, as git's are unless marked otherwise (none of
	// update-ref's is; push's --ipv4 and --ipv6 are the exceptions, which matter only
	// to arguments git refuses either way). (Slices, not a map: a package-level map
	// is built by code at the start of every process, a slice of constants is not.)
	Flags, Values []string
	// ShortValues are the short options that take a value ("o" for push's -o).
	ShortValues string
	// ShortFlags are the short options that take none ("vqdnfu46" for push's).
	ShortFlags string
}

// Option is the long option arg names, as git's parse_long_opt finds it (git 2.39 and
// 2.55 agree on every spelling): the option's name as Flags or Values spell it, and whether
// arg negates it. An option "x" is named by --x, --no-x and their unambiguous
// prefixes (--x-pre, --no-x-pre); an option "no-x" by --no-x and its prefixes, and
// negated by --x, --no-no-x and theirs; and --n, --no and --no- are prefixes of every
// option negated. ok is false when arg is not one of c's long options, or is a prefix
// of more than one (git refuses it as ambiguous).
func (c Command) Option(arg string) (name string, negated, ok bool) {
	body, found := strings.CutPrefix(arg, "--")
	word, _, _ := strings.Cut(body, "=")
	if !found || word == "" {
		return "", false, false
	}
	// What arg says after its "no-" (or "no-no-"), and whether that negates.
	rest, unset, noNo := word, false, false
	if r, isNo := strings.CutPrefix(word, "no-"); isNo {
		if r2, isNoNo := strings.CutPrefix(r, "no-"); isNoNo {
			rest, noNo = r2, true
		} else {
			rest, unset = r, true
		}
	}
	matches := 0
	match := func(n string, neg bool) { name, negated, matches = n, neg, matches+1 }
	for _, names := range [][]string{c.Flags, c.Values} {
		for _, n := range names {
			long, isNo := strings.CutPrefix(n, "no-")
			if !isNo && noNo {
				continue // --no-no-x names only an option spelled no-x
			}
			if rest == long {
				return n, unset != isNo, true // in full: no prefix of another counts
			}
			if strings.HasPrefix(long, rest) {
				match(n, unset != isNo)
			}
			if strings.HasPrefix("no-", body) { // --n, --no, --no-: every option, negated
				match(n, !isNo)
			}
		}
	}
	if matches != 1 {
		return "", false, false
	}
	return name, negated, true
}

// Shorts is the option letters of a cluster of short options ("-fu" → "fu"), up to
// the first that takes a value, which is the rest of the argument or the next one
// ("-fofoo" → "fo"); "" when arg is not one.
func (c Command) Shorts(arg string) string {
	if len(arg) < 2 || arg[0] != '-' || arg[1] == '-' {
		return ""
	}
	if i := strings.IndexAny(arg[1:], c.ShortValues); i >= 0 {
		return arg[1 : i+2]
	}
	return arg[1:]
}

// TakesNext reports whether git reads the argument after arg as arg's value: a short
// option that takes one, alone or ending a cluster, or a long option that takes one,
// named in full or by a prefix, without "=".
func (c Command) TakesNext(arg string) bool {
	if flags := c.Shorts(arg); flags != "" {
		return len(flags) == len(arg)-1 && strings.ContainsAny(flags[len(flags)-1:], c.ShortValues)
	}
	if strings.Contains(arg, "=") {
		return false
	}
	name, negated, ok := c.Option(arg)
	return ok && !negated && slices.Contains(c.Values, name)
}

// AsksUsage reports whether git's option parser, reading args as git's commands
// that take options after non-options do (git push's: "--" ends them), meets an h
// among short options before anything it refuses: "-h" alone, or after letters it
// knows ("-vh"), or --help-all. git then prints the command's usage on stdout and
// exits, with 129 up to git 2.55 and 0 since git 2.56; an unknown option or value
// before it is a usage error instead (usage on stderr, 129).
func (c Command) AsksUsage(args []string) bool {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--" || a == "--end-of-options":
			return false
		case a == "--help-all":
			return true
		case strings.HasPrefix(a, "--"):
			if _, _, ok := c.Option(a); !ok {
				return false
			}
			if c.TakesNext(a) {
				i++
			}
		case len(a) > 1 && a[0] == '-':
			for j := 1; j < len(a); j++ {
				ch := a[j : j+1]
				switch {
				case ch == "h":
					return true
				case strings.Contains(c.ShortValues, ch):
					if j == len(a)-1 {
						i++ // the value is the next argument
					}
					j = len(a) // the rest is the value
				case !strings.Contains(c.ShortFlags, ch):
					return false
				}
			}
		}
	}
	return false
}
