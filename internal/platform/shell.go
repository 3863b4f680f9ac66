package platform

import "strings"

// ShellQuote quotes s for a POSIX shell, the shell of the commands refretry's advice
// tells people to run: in single quotes, each single quote of s closing the quotes,
// escaped with a backslash, and reopening them.
func ShellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
