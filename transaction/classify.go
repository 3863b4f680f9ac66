package transaction

import (
	"strings"

	"github.com/refretry/refretry/failure"
	"github.com/refretry/refretry/internal/gitmsg"
)

// The patterns are compiled on first use: the classifier runs only after a failure, and
// a refretry whose first attempt succeeds should not pay for them at start-up. The
// lock messages both classifiers read are in internal/gitmsg.
var (
	rePackedNew  = gitmsg.LazyRegexp(`^unable to create file (.+/packed-refs\.new): File exists$`)
	reDFExisting = gitmsg.LazyRegexp(`^'([^']+)' exists; cannot create '([^']+)'$`)
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

// Classify turns a failed update-ref run (its exit code and C-locale stderr) into a
// *failure.Error: lock contention (failure.LockContention, with the lock), a stale
// leftover (failure.StaleLock), refs not as the update expects (failure.Conflict,
// with the ref that moved when git says where it is), a wrong command or input
// (failure.InvalidInput), or failure.Other. It reads only git's final error message:
// the last line that starts with "fatal: " or "error: ", and the advice lines after
// it. A message it does not recognise is failure.Other, which is never retried.
func Classify(exitCode int, stderr []byte) *failure.Error {
	e := &failure.Error{Command: "update-ref", ExitCode: exitCode, Class: failure.Other}
	if exitCode == 129 {
		e.Class = failure.InvalidInput
		e.Message = strings.TrimRight(string(stderr), "\n")
		return e
	}
	lines := gitmsg.Lines(stderr)
	head := gitmsg.Final(lines)
	if head < 0 {
		e.Message = strings.Join(lines, "\n")
		return e
	}
	first, ref := stripPrefixes(lines[head])
	rest := lines[head+1:]
	e.Message = strings.Join(append([]string{first}, rest...), "\n")
	inner, lockRef := gitmsg.StripCannotLockRef(first)
	if lockRef != "" {
		ref = lockRef
	}
	e.Ref = ref
	classifyInner(e, inner, ref, rest, exitCode)
	return e
}

// classifyInner sets e's class from git's message with its prefixes removed (inner),
// the ref it names and the advice lines after it: a lock, a ref not as expected, or
// wrong input; e stays failure.Other when none of these fits.
func classifyInner(e *failure.Error, inner, ref string, advice []string, exitCode int) {
	// A lock failure only counts when git died of it: 128, or 1 for -d.
	lockExit := exitCode == 128 || exitCode == 1
	switch {
	case classifyLock(e, inner, ref, advice, lockExit):
	case classifyConflict(e, inner, ref):
	case invalidInput(inner):
		e.Class = failure.InvalidInput
	}
}

// classifyLock classifies a message about a lock file, and reports whether inner is one.
func classifyLock(e *failure.Error, inner, ref string, advice []string, lockExit bool) bool {
	if inner == "cannot lock references" && len(advice) == 0 {
		e.Class = failure.Other
		if lockExit {
			e.Class = failure.LockContention
		}
		e.Lock = &failure.Lock{Ref: ref}
		return true
	}
	if m := gitmsg.Exists().FindStringSubmatch(inner); m != nil {
		classifyExists(e, &failure.Lock{Path: m[1], Ref: ref}, advice, lockExit)
		return true
	}
	if m := rePackedNew().FindStringSubmatch(inner); m != nil {
		e.Class = failure.StaleLock
		e.Lock = &failure.Lock{Path: m[1], Stale: true,
			StaleReason: "a packed-refs.new left behind by an interrupted git blocks every packed-refs rewrite"}
		return true
	}
	return false
}

// classifyExists classifies git's "Unable to create '<lock>': File exists." for the
// lock l, by the advice after it, which must be the whole rest of the message.
func classifyExists(e *failure.Error, l *failure.Lock, advice []string, lockExit bool) {
	e.Lock = l
	kind, pid, used := gitmsg.ReadAdvice(advice)
	if used != len(advice) {
		kind = gitmsg.AdviceNone
	}
	switch kind {
	case gitmsg.AdviceLive:
		l.PID = pid
	case gitmsg.AdviceDead:
		// git found no process pid (kill(pid, 0)) in its pid namespace, which is
		// refretry's: a holder in another one looks the same. Contention, until
		// the lock's age says otherwise (checkStale, lockfile.Rule).
		l.PID, l.HolderUnseen = pid, true
	default:
		return
	}
	if lockExit {
		e.Class = failure.LockContention
	}
}

// classifyConflict classifies a message saying that the refs are not as the update
// expects, and reports whether inner is one.
func classifyConflict(e *failure.Error, inner, ref string) bool {
	if m := gitmsg.CAS().FindStringSubmatch(inner); m != nil {
		e.Class = failure.Conflict
		e.Moved = &failure.Moved{Ref: ref, Actual: m[1], Expected: m[2]}
		return true
	}
	if m := reDFExisting().FindStringSubmatch(inner); m != nil {
		e.Class, e.Ref = failure.Conflict, m[2]
		return true
	}
	for _, p := range conflictInner {
		if strings.HasPrefix(inner, p) && !strings.HasSuffix(inner, ": reference broken") {
			e.Class = failure.Conflict
			return true
		}
	}
	return false
}

// invalidInput reports whether inner says that the command or its input is wrong.
func invalidInput(inner string) bool {
	for _, p := range invalidPrefixes {
		if strings.HasPrefix(inner, p) {
			return true
		}
	}
	for _, c := range invalidContains {
		if strings.Contains(inner, c) {
			return true
		}
	}
	return false
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
