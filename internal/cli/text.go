package cli

import (
	"os"
	"strings"
)

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
