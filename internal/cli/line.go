package cli

import "strings"

// line is refretry's command line as read: refretry's own options, which come first,
// then the optional command word, then the command's arguments (everything from the
// first other argument on).
//
// readLine is the one reader of refretry's options, driven by optionTable. It reads
// only the unambiguous shapes (--name, --name=value, --name value, -C value, -Cvalue,
// with a value that does not look like an option); for anything else (--help, a value
// missing or one that looks like an option) it leaves read false, and kong, given own,
// prints its help or its usage error (kong.go). kong never reads an option's value, so
// that no two readers need to agree. Starting kong costs about 1.5 ms of CPU
// (docs/benchmarks.md), which a plain update does not pay.
type line struct {
	own   []string          // refretry's options as given, -Cvalue split in two
	dirs  []string          // -C, in order
	flags map[string]string // each other option's text, the last one given, by spelling
	read  bool              // false: some option is for kong to judge
	cmd   command           // the command named, or the default one
	word  string            // the command word, "" for the default command
	rest  []string          // the command's arguments
}

// readLine reads args as refretry's command line.
func readLine(args []string) line {
	l := line{flags: map[string]string{}, read: true}
	i := 0
	for i < len(args) {
		n := l.option(args[i:])
		if n == 0 {
			break
		}
		i += n
	}
	l.cmd = defaultCommand()
	if i < len(args) {
		if c, ok := commandNamed(args[i]); ok {
			l.cmd, l.word = c, args[i]
			i++
		}
	}
	l.rest = args[i:]
	return l
}

// option reads the option that starts args and says how many arguments it took: 0
// when args[0] is not one of refretry's options (it starts the command or update-ref's
// arguments).
func (l *line) option(args []string) int {
	a := args[0]
	if a == "--help" {
		l.own, l.read = append(l.own, a), false
		return 1
	}
	if value, ok := strings.CutPrefix(a, "-C"); ok && value != "" {
		// -Cvalue is -C value, whatever value is ("-C=x" names the directory "=x").
		o, _ := lookup("", "-C")
		l.take(o, []string{"-C", value}, value)
		return 1
	}
	spelling, value, hasValue := strings.Cut(a, "=")
	o, known := lookup("", spelling)
	switch {
	case !known || o.isBool && hasValue:
		return 0 // --switch=value is not refretry's spelling: update-ref's (git rejects it)
	case o.isBool:
		l.take(o, args[:1], "true")
	case hasValue && strings.HasPrefix(a, "--"):
		l.take(o, args[:1], value)
	case len(args) < 2:
		l.own, l.read = append(l.own, a), false // kong reports the missing value
	default:
		l.take(o, args[:2], args[1])
		return 2
	}
	return 1
}

// take records option o, given as words, with value. A value that is a word of its
// own and looks like an option is kong's to judge (an error).
func (l *line) take(o option, words []string, value string) {
	l.own = append(l.own, words...)
	if len(words) == 2 && strings.HasPrefix(value, "-") && value != "-" {
		l.read = false
	}
	if o.isList {
		l.dirs = append(l.dirs, value)
	} else {
		l.flags[o.name] = value
	}
}
