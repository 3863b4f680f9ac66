// Package gitopts reads a git command's arguments the way git's option parser does,
// as far as refretry needs to: which long option an argument names (by its full name,
// or by a prefix that fits only one option), whether it is negated (--no-<name>), the
// letters of a cluster of short options (-fq), and whether the next argument is an
// option's value (-o <value>, -fo <value>, --push-opt <value>).
package gitopts

import "strings"

// Command is one git command's options.
type Command struct {
	// Names maps each long option's name to whether it takes its value from the next
	// argument when none is given with "=". Options git hides from -h count too: a
	// prefix must fit exactly one of all of them.
	Names map[string]bool
	// ShortValues are the short options that take a value ("o" for push's -o).
	ShortValues string
}

// Option is the long option arg names: its full name and whether it is negated
// (--no-<name>). ok is false when arg is not one of c's long options, or is a prefix
// of more than one (git refuses it as ambiguous).
func (c Command) Option(arg string) (name string, negated, ok bool) {
	body, found := strings.CutPrefix(arg, "--")
	body, _, _ = strings.Cut(body, "=")
	if !found || body == "" {
		return "", false, false
	}
	if _, exact := c.Names[body]; exact {
		return body, false, true
	}
	positive, isNo := strings.CutPrefix(body, "no-")
	if _, exact := c.Names[positive]; isNo && exact {
		return positive, true, true
	}
	matches := 0
	for n := range c.Names {
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
	return ok && !negated && c.Names[name]
}
