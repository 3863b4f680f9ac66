package cli

import (
	"slices"
	"strings"
)

// split finds where refretry's own options end in args, by their spellings in the
// grammar (grammarIndex): at is the first argument that is neither one of them nor
// an option's value, word the command it names ("" for none: the default command's
// arguments start there), and complete is false when the last option lacks its
// value. It reads no value: kong does (kong.go), except on the plain path, where
// there is none to read.
func split(args []string) (at int, word string, complete bool) {
	for at < len(args) {
		n := ownOption(args[at])
		if n == 0 {
			break
		}
		if at+n > len(args) {
			return len(args), "", false
		}
		at += n
	}
	if at < len(args) && slices.Contains(grammarIndex.commands, args[at]) {
		word = args[at]
	}
	return at, word, true
}

// ownOption is how many arguments refretry's option a takes with it (1 or 2), 0 when
// a is not one of refretry's options: --name, --name=value, --name value, -X value,
// -Xvalue. A switch given a value (--coalesce=1) is not refretry's spelling: it is
// update-ref's (git rejects it).
func ownOption(a string) int {
	name, _, hasValue := strings.Cut(a, "=")
	switch {
	case slices.Contains(grammarIndex.switches, a):
		return 1
	case !slices.Contains(grammarIndex.valued, name) && (len(a) < 3 || !slices.Contains(grammarIndex.valued, a[:2])):
		return 0
	case strings.HasPrefix(a, "--") && hasValue, !strings.HasPrefix(a, "--") && len(a) > 2:
		return 1
	}
	return 2
}
