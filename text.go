package main

import (
	"os"
	"strings"
)

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// pidFileOf returns the ~pid.lock companion of a lock when it exists.
func pidFileOf(lock string) string {
	p, ok := strings.CutSuffix(lock, ".lock")
	if !ok {
		return ""
	}
	p += "~pid.lock"
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return p
}
