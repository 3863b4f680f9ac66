package fetch

import (
	"strings"

	"github.com/refretry/refretry/failure"
	"github.com/refretry/refretry/internal/gitmsg"
)

// statusUnableToUpdate is the reason on a ref's status line when its update failed
// for a reason git printed above it (a lock, a lost race): never a cause of its own.
const statusUnableToUpdate = "unable to update local ref"

// Messages (after "error: " or "fatal: ") that decide a class of their own. Matched as
// substrings, in git 2.39's and 2.55's wording.
var (
	notFoundSigns = []string{
		"does not appear to be a git repository",
		"couldn't find remote ref ",
		"' not found", // HTTP: "repository 'http://…/' not found"
		"No such remote ",
	}
	declinedSigns = []string{
		"update aborted by the reference-transaction hook", // 2.55
		"ref updates aborted by hook",                      // 2.39
	}
	rejectedSigns = []string{
		"refusing to fetch into branch ",
		"refusing to fetch into current branch ",
	}
	// effectSigns are lines that only follow a cause git printed before them, or
	// that report auto-maintenance after the fetch: they decide nothing.
	effectSigns = []string{
		"Could not read from remote repository.",
		"could not remove reference ",         // 2.39, after a --prune deletion's own error
		"unable to compact stack: ",           // reftable auto-compaction after the fetch: locked, or concurrently modified
		" did not send all necessary objects", // the connectivity check failed: its cause came first
	}
)

// finding is one cause of a failure that git named, in the order it named them.
type finding struct {
	class failure.Class
	line  string
}

// Classify turns a finished git fetch (exit code and C-locale standard error) into a
// *failure.Error, or nil when it succeeded. Every error line and every rejected ref's status
// line is read: a fetch updates many refs, and it is retried only when every failure
// it names is one that another attempt can get past.
// Classify reads stderr only: a local ref that git's connectivity check died on
// counts as deleted meanwhile (Runner asks the repository).
func Classify(exitCode int, stderr []byte) *failure.Error {
	return classify(exitCode, stderr, nil)
}

// classify is Classify; gone, when set, says whether a ref that git's connectivity
// check died on is gone now.
func classify(exitCode int, stderr []byte, gone func(ref string) bool) *failure.Error {
	if exitCode == 0 {
		return nil
	}
	e := &failure.Error{Command: "fetch", ExitCode: exitCode, Class: failure.Other}
	if exitCode == 129 {
		e.Class, e.Message = failure.Usage, gitmsg.LastMessage(stderr)
		return e
	}
	if gitmsg.ReadTransport(stderr).Auth {
		e.Class, e.Message = failure.Auth, gitmsg.LastMessage(stderr)
		return e
	}
	readFindings(stderr, gone).decide(e, stderr)
	return e
}

// findings are the causes a fetch's standard error names: the first that is neither a
// lock nor a lost race, the first lock and the first lost race.
type findings struct {
	gone   func(ref string) bool
	first  *finding
	lock   *finding
	locked *failure.Lock
	race   *finding
	moved  *failure.Moved
}

// readFindings reads every line of stderr.
func readFindings(stderr []byte, gone func(ref string) bool) *findings {
	fs := &findings{gone: gone}
	lines := gitmsg.Lines(stderr)
	for i := 0; i < len(lines); i++ {
		msg, isError := errorMessage(lines[i])
		if !isError {
			fs.cause(otherLine(lines[i]))
			continue
		}
		i += fs.readError(lines[i], msg, lines[i+1:])
	}
	return fs
}

// readError reads the error line whose message is msg; next are the lines after it.
// It returns how many of those belong to it (git's advice after a lock).
func (fs *findings) readError(line, msg string, next []string) (used int) {
	inner, ref := msg, ""
	if r, rest, ok := cutDeleteRef(inner); ok { // --prune
		inner, ref = rest, r
	}
	if in, r := gitmsg.StripCannotLockRef(inner); r != "" {
		inner, ref = in, r
	}
	if m := gitmsg.Exists().FindStringSubmatch(inner); m != nil {
		_, _, used = gitmsg.ReadAdvice(next)
		fs.lockHeld(line, &failure.Lock{Path: m[1], Ref: ref})
		return used
	}
	if inner == "cannot lock references" { // reftable: tables.list.lock was held
		fs.lockHeld(line, &failure.Lock{Ref: ref})
		return 0
	}
	if ref != "" && inner == "unable to resolve reference '"+ref+"'" {
		// A loose ref deleted by another process while it was being locked: most
		// often by the pack-refs of the auto-maintenance that git 2.55 starts after
		// the fetch, pruning. It decides nothing; alone, it leaves the failure
		// unexplained (other).
		return 0
	}
	if r, ok := cutFetchingRefRace(inner); ok { // git 2.51–2.53
		fs.raceLost(line, &failure.Moved{Ref: r})
		return 0
	}
	if r, ok := cutDeletedUnderCheck(line); ok && (fs.gone == nil || fs.gone(r)) {
		fs.raceLost(line, &failure.Moved{Ref: r})
		return 0
	}
	if m := gitmsg.CAS().FindStringSubmatch(inner); m != nil && ref != "" {
		fs.raceLost(line, &failure.Moved{Ref: ref, Actual: m[1], Expected: m[2]})
		return 0
	}
	fs.cause(errorClass(line, msg))
	return 0
}

// cause records f, a cause that is neither a lock nor a lost race, unless one came
// before it.
func (fs *findings) cause(f *finding) {
	if f != nil && fs.first == nil {
		fs.first = f
	}
}

// lockHeld records the lock l that line reports held, unless one came before it.
func (fs *findings) lockHeld(line string, l *failure.Lock) {
	if fs.lock == nil {
		fs.lock, fs.locked = &finding{failure.LockContention, line}, l
	}
}

// raceLost records the ref that line reports moved by another writer, unless a race
// came before it.
func (fs *findings) raceLost(line string, m *failure.Moved) {
	if fs.race == nil {
		fs.race, fs.moved = &finding{failure.LostRace, line}, m
	}
}

// decide sets e's class and message from the findings: any other cause first, as
// another attempt would not get past it; then a lock; then a lost race.
func (fs *findings) decide(e *failure.Error, stderr []byte) {
	switch {
	case fs.first != nil:
		e.Class, e.Message = fs.first.class, fs.first.line
		if e.Class == failure.Transport {
			t := gitmsg.ReadTransport(stderr)
			e.Wait, e.Refused = t.RetryAfter, t.Refused
		}
	case fs.lock != nil:
		e.Class, e.Message, e.Lock, e.Ref = fs.lock.class, fs.lock.line, fs.locked, fs.locked.Ref
	case fs.race != nil:
		e.Class, e.Message, e.Moved, e.Ref = fs.race.class, fs.race.line, fs.moved, fs.moved.Ref
	default:
		e.Message = gitmsg.LastMessage(stderr)
	}
}

// errorMessage is line's message without git's "error: " or "fatal: ".
func errorMessage(line string) (string, bool) {
	for _, p := range []string{"error: ", "fatal: "} {
		if msg, ok := strings.CutPrefix(line, p); ok {
			return msg, true
		}
	}
	return "", false
}

// cutDeleteRef removes the wrapper --prune puts around why a deletion failed: "could
// not delete reference <ref>: " for one ref, "could not delete references: " for
// several (ref ""), returning the ref and the rest.
func cutDeleteRef(msg string) (ref, rest string, ok bool) {
	if rest, ok := strings.CutPrefix(msg, "could not delete references: "); ok {
		return "", rest, true
	}
	after, ok := strings.CutPrefix(msg, "could not delete reference ")
	if !ok {
		return "", msg, false
	}
	ref, rest, ok = strings.Cut(after, ": ")
	return ref, rest, ok
}

// cutFetchingRefRace reads git 2.51–2.53's report of a ref that a concurrent writer
// changed between this fetch's read and its update: "fetching ref <ref> failed:
// incorrect old value provided" (moved), or "…: reference already exists" (created
// meanwhile, or its lock held: those releases cannot tell the two apart). Their
// batched ref updates (builtin/fetch.c, ref_transaction_rejection_handler) print
// only the reason's name, where 2.54 and later print the detail ("cannot lock ref
// …").
func cutFetchingRefRace(msg string) (ref string, ok bool) {
	after, ok := strings.CutPrefix(msg, "fetching ref ")
	if !ok {
		return "", false
	}
	for _, reason := range []string{"incorrect old value provided", "reference already exists"} {
		if r, ok := strings.CutSuffix(after, " failed: "+reason); ok && r != "" && !strings.Contains(r, " ") {
			return r, true
		}
	}
	return "", false
}

// badObject starts the line with which git 2.55's connectivity check (`rev-list
// --objects --not --all`) dies on a local ref it cannot read.
const badObject = "fatal: bad object "

// cutDeletedUnderCheck reads the line with which git 2.55's connectivity check dies
// when another process deletes a local ref while the check lists them: "fatal: bad
// object <ref>", followed by "<url> did not send all necessary objects". On the files
// backend, git 2.55 hands such a ref to the check as if it still pointed at an object,
// where 2.39 skips it (reftable is not affected). The check runs before the fetch
// updates any ref, so the fetch applied nothing. The same line is what an unreadable
// object would give (the ref still there), but git prints the object's own errors
// before it; Runner also asks whether the ref is gone.
func cutDeletedUnderCheck(line string) (ref string, ok bool) {
	ref, ok = strings.CutPrefix(line, badObject)
	if !ok || !strings.HasPrefix(ref, "refs/") || strings.Contains(ref, " ") {
		return "", false
	}
	return ref, true
}

// errorClass is the cause an error line names, other than a lock or a lost race; nil
// for a line that only reports the effect of another cause.
func errorClass(line, msg string) *finding {
	switch {
	case strings.HasPrefix(msg, "task '") && strings.HasSuffix(msg, "' failed"):
		return nil // auto-maintenance after the fetch
	case gitmsg.ContainsAny(msg, effectSigns):
		return nil
	case gitmsg.ContainsAny(msg, notFoundSigns):
		return &finding{failure.NotFound, line}
	case gitmsg.ContainsAny(msg, declinedSigns):
		return &finding{failure.Declined, line}
	case gitmsg.ContainsAny(msg, rejectedSigns):
		return &finding{failure.Rejected, line}
	}
	if t := gitmsg.ReadTransport([]byte(line)); t.Line != "" {
		return &finding{failure.Transport, line}
	}
	return &finding{failure.Other, line}
}

// otherLine is the cause a line without "error: " or "fatal: " names: a rejected
// ref's status line, or a transport failure that ssh or libcurl reported in words of
// their own. nil for anything else (progress, "From <url>", updated refs, remote:
// lines, hints).
func otherLine(line string) *finding {
	if rest, ok := strings.CutPrefix(line, " ! "); ok {
		if statusReason(rest) == statusUnableToUpdate {
			return nil
		}
		return &finding{failure.Rejected, line}
	}
	if strings.HasPrefix(line, "remote:") || strings.HasPrefix(line, "hint:") {
		return nil
	}
	if t := gitmsg.ReadTransport([]byte(line)); t.Line != "" {
		return &finding{failure.Transport, line}
	}
	return nil
}

// statusReason is the reason in parentheses that ends a ref's status line.
func statusReason(status string) string {
	status = strings.TrimRight(status, " ")
	if !strings.HasSuffix(status, ")") {
		return ""
	}
	i := strings.LastIndex(status, "(")
	if i < 0 {
		return ""
	}
	return status[i+1 : len(status)-1]
}
