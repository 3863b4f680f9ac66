package transaction

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

// The patterns are compiled on first use: the classifier runs only after a failure, and
// a refretry whose first attempt succeeds should not pay for them at start-up.
var (
	reMayBeHeld  = lazyRegexp(`^Lock may be held by process (\d+); if no git process is running, the lock file may be stale \(PIDs can be reused\)$`)
	reWasHeld    = lazyRegexp(`^Lock was held by process (\d+), which is no longer running; the lock file appears to be stale$`)
	reExists     = lazyRegexp(`^Unable to create '(.+\.lock)': File exists\.$`)
	reCAS        = lazyRegexp(`^is at ([0-9a-f]+) but expected ([0-9a-f]+)$`)
	rePackedNew  = lazyRegexp(`^unable to create file (.+/packed-refs\.new): File exists$`)
	reDFExisting = lazyRegexp(`^'([^']+)' exists; cannot create '([^']+)'$`)
)

// conflictInner lists the inner messages (after any "cannot lock ref '<ref>': ") that
// mean the refs are not as the update expects.
var conflictInner = []string{
	"reference already exists",
	"reference is missing but expected ",
	"unable to resolve reference '",
	"dangling symref already exists",
	"expected symref with target ",
	"verifying symref target: ",
	"there is a non-empty directory ",
}

// invalidPrefixes lists messages that mean the command or its input is wrong.
var invalidPrefixes = []string{
	"empty command in input", "whitespace before command: ", "unknown command: ",
	"badly quoted argument: ", "unexpected character after quoted argument: ",
	"invalid ref format: ", "refusing to ", "trying to write ", "multiple updates for ",
	"cannot process '", "Refusing to perform update with empty message",
	"cannot restart ongoing transaction", "prepared transactions can only be closed",
	"transaction is closed", "--batch-updates can only be used with --stdin",
	"option unknown: ", "symref-delete: cannot operate with deref mode",
	"symref-verify: cannot operate with deref mode", "reftable lock timeout ",
	"unknown option ", "unknown switch ",
}

// invalidContains lists fragments of per-command parse errors
// ("update <ref>: invalid <new-oid>: X" and the like).
var invalidContains = []string{
	": missing <", ": invalid <", ": extra input: ", ": zero <", ": expected SP but got: ",
	": expected NUL but got: ", ": unexpected end of input when reading <",
	": not a valid SHA1", ": not a valid old SHA1", " expected old value", ": invalid arg '",
	": invalid oid: ", ": invalid ref: ", "expected SP but got: ",
	"' has neither a valid OID nor a target",
}

// Classify turns a failed update-ref run (its exit code and C-locale stderr) into an
// *Error. It reads only git's final error message: the last line that starts with
// "fatal: " or "error: ", and the advice lines after it. A message it does not
// recognise is ClassOther, which is never retried.
func Classify(exitCode int, stderr []byte) *Error {
	e := &Error{ExitCode: exitCode, Class: ClassOther}
	if exitCode == 129 {
		e.Class = ClassInvalidInput
		e.Message = strings.TrimRight(string(stderr), "\n")
		return e
	}
	lines := strings.Split(strings.TrimRight(string(stderr), "\n"), "\n")
	head := -1
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.HasPrefix(lines[i], "fatal: ") || strings.HasPrefix(lines[i], "error: ") {
			head = i
			break
		}
	}
	if head < 0 {
		e.Message = strings.Join(lines, "\n")
		return e
	}
	first, ref := stripPrefixes(lines[head])
	rest := lines[head+1:]
	e.Message = strings.Join(append([]string{first}, rest...), "\n")
	inner, lockRef := stripCannotLockRef(first)
	if lockRef != "" {
		ref = lockRef
	}
	classifyInner(e, inner, ref, rest, exitCode)
	return e
}

func classifyInner(e *Error, inner, ref string, advice []string, exitCode int) {
	// A lock failure only counts when git died of it: 128, or 1 for -d.
	lockExit := exitCode == 128 || exitCode == 1
	if inner == "cannot lock references" && len(advice) == 0 {
		e.Class = ClassOther
		if lockExit {
			e.Class = ClassLockContention
		}
		e.Cause = &LockedError{Ref: ref}
		return
	}
	if m := reExists().FindStringSubmatch(inner); m != nil {
		l := &LockedError{Lock: m[1], Ref: ref}
		e.Cause = l
		switch kind, pid := readAdvice(advice); kind {
		case adviceLive:
			l.PID = pid
			if lockExit {
				e.Class = ClassLockContention
			}
		case adviceDead:
			l.PID, l.Stale = pid, true
			l.StaleReason = "git reports that its holder, process " + strconv.Itoa(pid) + ", is no longer running"
			e.Class = ClassStaleLock
		}
		return
	}
	if m := rePackedNew().FindStringSubmatch(inner); m != nil {
		e.Class = ClassStaleLock
		e.Cause = &LockedError{Lock: m[1], Stale: true,
			StaleReason: "a packed-refs.new left behind by an interrupted git blocks every packed-refs rewrite"}
		return
	}
	if m := reCAS().FindStringSubmatch(inner); m != nil {
		e.Class = ClassConflict
		e.Cause = &StaleValueError{Ref: ref, Actual: m[1], Expected: m[2]}
		return
	}
	if m := reDFExisting().FindStringSubmatch(inner); m != nil {
		e.Class = ClassConflict
		e.Cause = &RefConflictError{Ref: m[2], Reason: inner}
		return
	}
	for _, p := range conflictInner {
		if strings.HasPrefix(inner, p) && !strings.HasSuffix(inner, ": reference broken") {
			e.Class = ClassConflict
			e.Cause = &RefConflictError{Ref: ref, Reason: inner}
			return
		}
	}
	for _, p := range invalidPrefixes {
		if strings.HasPrefix(inner, p) {
			e.Class = ClassInvalidInput
			return
		}
	}
	for _, c := range invalidContains {
		if strings.Contains(inner, c) {
			e.Class = ClassInvalidInput
			return
		}
	}
}

type adviceKind int

const (
	adviceNone adviceKind = iota
	adviceLive            // the holder may be running
	adviceDead            // git proved the holder gone
)

// readAdvice reads the advice that must follow "Unable to create …: File exists.": a
// blank line, then exactly one of the known advice texts, and nothing else.
func readAdvice(lines []string) (adviceKind, int) {
	if len(lines) < 2 || lines[0] != "" {
		return adviceNone, 0
	}
	body := lines[1:]
	switch {
	case len(body) == 1 && body[0] == adviceAnother:
		return adviceLive, 0
	case len(body) == 5 && body[0] == adviceOld1 && body[1] == adviceOld2 &&
		body[2] == adviceOld3 && body[3] == adviceOld4 && body[4] == adviceOld5:
		return adviceLive, 0
	case len(body) == 1:
		if m := reMayBeHeld().FindStringSubmatch(body[0]); m != nil {
			pid, _ := strconv.Atoi(m[1])
			return adviceLive, pid
		}
		if m := reWasHeld().FindStringSubmatch(body[0]); m != nil {
			pid, _ := strconv.Atoi(m[1])
			return adviceDead, pid
		}
	}
	return adviceNone, 0
}

// stripPrefixes removes the entry-point prefix from a message's first line and returns
// the ref it names, if any.
func stripPrefixes(line string) (string, string) {
	var ref string
	switch {
	case strings.HasPrefix(line, "fatal: "):
		line = line[len("fatal: "):]
	case strings.HasPrefix(line, "error: "):
		line = line[len("error: "):]
	}
	if rest, ok := strings.CutPrefix(line, "update_ref failed for ref '"); ok {
		// Ref names cannot contain ':', so "': " ends the name.
		if i := strings.Index(rest, "': "); i >= 0 {
			ref, line = rest[:i], rest[i+3:]
		}
	}
	for _, p := range []string{"prepare: ", "commit: "} {
		if rest, ok := strings.CutPrefix(line, p); ok {
			line = rest
			break
		}
	}
	return line, ref
}

// stripCannotLockRef removes one "cannot lock ref '<ref>': " wrapper.
func stripCannotLockRef(line string) (string, string) {
	rest, ok := strings.CutPrefix(line, "cannot lock ref '")
	if !ok {
		return line, ""
	}
	i := strings.Index(rest, "': ")
	if i < 0 {
		return line, ""
	}
	return rest[i+3:], rest[:i]
}

// lazyRegexp returns a function that compiles expr once, when first called.
func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
