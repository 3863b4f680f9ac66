package push

import (
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// Advice lines the server's lockfile.c prints after "Unable to create …: File exists.".
const (
	adviceAnother = "Another git process seems to be running in this repository, or the lock file may be stale"
	// git 2.39 and earlier printed these five lines instead.
	adviceOld1 = "Another git process seems to be running in this repository, e.g."
	adviceOld2 = "an editor opened by 'git commit'. Please make sure all processes"
	adviceOld3 = "are terminated then try again. If it still fails, a git process"
	adviceOld4 = "may have crashed in this repository earlier:"
	adviceOld5 = "remove the file manually to continue."
)

var (
	reExists    = lazyRegexp(`^Unable to create '(.+\.lock)': File exists\.$`)
	reMayBeHeld = lazyRegexp(`^Lock may be held by process (\d+); if no git process is running, the lock file may be stale \(PIDs can be reused\)$`)
	reCAS       = lazyRegexp(`^is at ([0-9a-f]+) but expected ([0-9a-f]+)$`)
	reWasHeld   = lazyRegexp(`^Lock was held by process (\d+), which is no longer running; the lock file appears to be stale$`)
)

// remoteLines returns the server's messages: the text after "remote: " on each
// stderr line, without the padding (8 spaces, or an erase-line sequence on a
// terminal) that git adds after it.
func remoteLines(stderr []byte) []string {
	var out []string
	for _, line := range strings.Split(string(stderr), "\n") {
		line = strings.TrimSuffix(line, "\r")
		rest, ok := strings.CutPrefix(line, "remote:")
		if !ok {
			continue
		}
		rest = strings.TrimPrefix(rest, " ")
		rest = strings.TrimSuffix(rest, "\x1b[K")
		out = append(out, strings.TrimRight(rest, " "))
	}
	return out
}

// evidence is what the server's remote: lines say about its ref updates.
type evidence struct {
	// locks are the lock failures: reftable's "cannot lock references", and
	// lockfile.c's "Unable to create '….lock': File exists." followed by one of its
	// advice texts. A lock message without known advice is not evidence.
	locks []*LockedError
	// moved are refs whose compare-and-swap failed on the server ("cannot lock ref
	// '<ref>': is at X but expected Y"): another push moved them after the
	// advertisement this push was based on.
	moved map[string]*MovedError
}

// remoteEvidence reads the server's lines in stderr.
func remoteEvidence(stderr []byte) evidence {
	lines := remoteLines(stderr)
	var ev evidence
	for i, line := range lines {
		msg, ok := strings.CutPrefix(line, "error: ")
		if !ok {
			continue
		}
		if msg == "cannot lock references" {
			ev.locks = append(ev.locks, &LockedError{})
			continue
		}
		var ref string
		if rest, ok := strings.CutPrefix(msg, "cannot lock ref '"); ok {
			j := strings.Index(rest, "': ")
			if j < 0 {
				continue
			}
			ref, msg = rest[:j], rest[j+3:]
		}
		if m := reCAS().FindStringSubmatch(msg); m != nil && ref != "" {
			if ev.moved == nil {
				ev.moved = map[string]*MovedError{}
			}
			ev.moved[ref] = &MovedError{Ref: ref, Actual: m[1], Expected: m[2]}
			continue
		}
		m := reExists().FindStringSubmatch(msg)
		if m == nil {
			continue
		}
		l := &LockedError{Ref: ref, Lock: m[1]}
		switch kind, pid := readAdvice(lines[i+1:]); kind {
		case adviceLive:
			l.PID = pid
		case adviceDead:
			l.PID, l.Stale = pid, true
		default:
			continue
		}
		ev.locks = append(ev.locks, l)
	}
	return ev
}

type adviceKind int

const (
	adviceNone adviceKind = iota
	adviceLive            // the holder may be running
	adviceDead            // the server proved the holder gone
)

// readAdvice reads the advice that follows a lock message: a blank line, then one of
// the known texts.
func readAdvice(lines []string) (adviceKind, int) {
	if len(lines) < 2 || lines[0] != "" {
		return adviceNone, 0
	}
	body := lines[1:]
	switch {
	case body[0] == adviceAnother:
		return adviceLive, 0
	case len(body) >= 5 && body[0] == adviceOld1 && body[1] == adviceOld2 &&
		body[2] == adviceOld3 && body[3] == adviceOld4 && body[4] == adviceOld5:
		return adviceLive, 0
	}
	if m := reMayBeHeld().FindStringSubmatch(body[0]); m != nil {
		pid, _ := strconv.Atoi(m[1])
		return adviceLive, pid
	}
	if m := reWasHeld().FindStringSubmatch(body[0]); m != nil {
		pid, _ := strconv.Atoi(m[1])
		return adviceDead, pid
	}
	return adviceNone, 0
}

// lazyRegexp compiles expr on first use, so that a push that succeeds pays nothing.
func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
