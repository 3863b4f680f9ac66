// Package text holds the few string helpers the packages share.
package text

import "strings"

// FirstLine is s up to its first newline.
func FirstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// ShellQuote quotes s for a POSIX shell: in single quotes, each single quote of s
// closing the quotes, escaped with a backslash, and reopening them.
func ShellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
