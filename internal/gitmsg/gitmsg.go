// Package gitmsg knows the C-locale wording of git's lock and ref-transaction messages
// that both the update-ref classifier (transaction) and the push classifier (push)
// read: lockfile.c's advice texts and the patterns around them. Each package decides
// what a message means for its own command; this one only reads the words.
package gitmsg

import (
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// Advice lines lockfile.c prints after "Unable to create '…': File exists.".
const (
	adviceAnother = "Another git process seems to be running in this repository, or the lock file may be stale"
	// git before the short advice (2.39 and earlier) printed these five lines.
	adviceOld1 = "Another git process seems to be running in this repository, e.g."
	adviceOld2 = "an editor opened by 'git commit'. Please make sure all processes"
	adviceOld3 = "are terminated then try again. If it still fails, a git process"
	adviceOld4 = "may have crashed in this repository earlier:"
	adviceOld5 = "remove the file manually to continue."
)

// The patterns are compiled on first use: they are read only after a failure, and a
// refretry whose first attempt succeeds should not pay for them at start-up.
var (
	// Exists matches lockfile.c's "Unable to create '<path>.lock': File exists."; the
	// submatch is the lock's path.
	Exists = LazyRegexp(`^Unable to create '(.+\.lock)': File exists\.$`)
	// CAS matches a failed compare-and-swap, "is at <actual> but expected <expected>".
	CAS         = LazyRegexp(`^is at ([0-9a-f]+) but expected ([0-9a-f]+)$`)
	reMayBeHeld = LazyRegexp(`^Lock may be held by process (\d+); if no git process is running, the lock file may be stale \(PIDs can be reused\)$`)
	reWasHeld   = LazyRegexp(`^Lock was held by process (\d+), which is no longer running; the lock file appears to be stale$`)
)

// LazyRegexp returns a function that compiles expr once, when first called.
func LazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}

// Advice is what lockfile.c's advice says about a lock's holder.
type Advice int

const (
	AdviceNone Advice = iota // no known advice text: not a lock message git explained
	AdviceLive               // the holder may be running
	AdviceDead               // git proved the holder gone
)

// ReadAdvice reads the advice that follows "Unable to create …: File exists.": a blank
// line, then one of the known texts. It returns what the advice says, the holder's pid
// when it names one, and how many lines (the blank one included) the advice took, so a
// caller can require that nothing else follows.
func ReadAdvice(lines []string) (kind Advice, pid int, used int) {
	if len(lines) < 2 || lines[0] != "" {
		return AdviceNone, 0, 0
	}
	body := lines[1:]
	switch {
	case body[0] == adviceAnother:
		return AdviceLive, 0, 2
	case len(body) >= 5 && body[0] == adviceOld1 && body[1] == adviceOld2 &&
		body[2] == adviceOld3 && body[3] == adviceOld4 && body[4] == adviceOld5:
		return AdviceLive, 0, 6
	}
	if m := reMayBeHeld().FindStringSubmatch(body[0]); m != nil {
		pid, _ := strconv.Atoi(m[1])
		return AdviceLive, pid, 2
	}
	if m := reWasHeld().FindStringSubmatch(body[0]); m != nil {
		pid, _ := strconv.Atoi(m[1])
		return AdviceDead, pid, 2
	}
	return AdviceNone, 0, 0
}

// StripCannotLockRef removes one "cannot lock ref '<ref>': " wrapper and returns the
// inner message and the ref; a line without the wrapper comes back unchanged with no ref.
func StripCannotLockRef(line string) (inner, ref string) {
	rest, ok := strings.CutPrefix(line, "cannot lock ref '")
	if !ok {
		return line, ""
	}
	// Ref names cannot contain ':', so "': " ends the name.
	i := strings.Index(rest, "': ")
	if i < 0 {
		return line, ""
	}
	return rest[i+3:], rest[:i]
}

// Lines splits git's stderr into lines, without the final newline's empty line.
func Lines(stderr []byte) []string {
	return strings.Split(strings.TrimRight(string(stderr), "\n"), "\n")
}

// Final is the index in lines of git's last "fatal: " or "error: " line, the summary
// of a failure that the lines after it (advice) explain; -1 when there is none.
func Final(lines []string) int {
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.HasPrefix(lines[i], "fatal: ") || strings.HasPrefix(lines[i], "error: ") {
			return i
		}
	}
	return -1
}

// LastMessage is git's last "fatal: " or "error: " line, the usual summary of a
// failure; else its last line that is not blank; else "no message".
func LastMessage(stderr []byte) string {
	lines := Lines(stderr)
	if i := Final(lines); i >= 0 {
		return lines[i]
	}
	for i := len(lines) - 1; i >= 0; i-- {
		if s := strings.TrimSpace(lines[i]); s != "" {
			return s
		}
	}
	return "no message"
}
