package ci

import (
	"fmt"
	"log/slog"
	"strings"
	"time"
)

// schemaVersion is the version of the record schema, carried by every record as
// "schema". It changes only when a field is removed or changes meaning; new optional
// fields do not change it.
const schemaVersion = 1

// The records' messages.
const (
	msgAttempt = "attempt"
	msgSummary = "summary"
	msgNote    = "note"
)

// Attribute keys, as they appear in JSON records (docs/logging.md documents them).
const (
	keySchema        = "schema"
	keyOperationID   = "operation_id"
	keyCommand       = "command"
	keyShim          = "shim"
	keyAttempt       = "attempt"
	keyDurationMS    = "duration_ms"
	keyExitCode      = "exit_code"
	keyClass         = "class"
	keyError         = "error"
	keyLock          = "lock"
	keyLockAgeMS     = "lock_age_ms"
	keyHolderPID     = "holder_pid"
	keyHolderUnseen  = "holder_unseen"
	keyPIDNamespace  = "pid_namespace"
	keyDelayMS       = "delay_ms"
	keyFinal         = "final"
	keyResult        = "result"
	keyAttempts      = "attempts"
	keyElapsedMS     = "elapsed_ms"
	keyReason        = "reason"
	keyUpdates       = "updates"
	keyRefs          = "refs"
	keyRefsTruncated = "refs_truncated"
	keyGitVersion    = "git_version"
	keyRefBackend    = "ref_backend"
	keyAdvice        = "advice"
	keyKind          = "kind"
	keyText          = "text"
)

// Bounds on what one record carries, so that a line stays short.
const (
	maxRefs      = 20   // refs listed in a summary
	maxRefLen    = 256  // bytes of one ref name
	maxErrorLen  = 512  // bytes of git's message
	maxAdviceLen = 1024 // bytes of advice
)

// Attempt is one finished attempt.
type Attempt struct {
	Number   int           // 1 for the first
	Duration time.Duration // how long git ran
	ExitCode int           // git's exit code (0 on success)
	// Class is the failure's class ("lock-contention", "stale-lock", "conflict",
	// "invalid-input", "other"); empty on success.
	Class string
	Error string // the first line of git's message; empty on success
	// Lock, LockAge and HolderPID describe the lock another writer held, when known.
	Lock      string
	LockAge   time.Duration
	HolderPID int
	// HolderUnseen says that no process HolderPID runs where refretry can see it: the
	// holder ended, or it runs in another pid namespace, where it may still work.
	HolderUnseen bool
	// PIDNamespace is "container" when refretry runs in a pid namespace other than
	// the host's, where holders in other containers or on the host cannot be seen;
	// "" otherwise. Recorded only with HolderUnseen.
	PIDNamespace string
	// Delay is the pause before the next attempt; zero when none follows.
	Delay time.Duration
	Final bool // no attempt follows
}

// Result is how an operation ended.
type Result string

const (
	ResultSuccess   Result = "success"    // git succeeded (after however many attempts)
	ResultGaveUp    Result = "gave-up"    // still contended when the budget ran out
	ResultStaleLock Result = "stale-lock" // a lock's holder is gone: not waited for
	ResultFailed    Result = "failed"     // git failed for a reason retrying cannot fix
	ResultError     Result = "error"      // refretry itself failed: git could not run, a bad setting, …
)

// Summary is the outcome of an operation. The command it names is the Config's.
type Summary struct {
	Result   Result
	ExitCode int
	Attempts int
	Elapsed  time.Duration
	// Reason says why refretry gave up: "deadline", "max-attempts" or "canceled".
	Reason string
	// Class and Error describe the last failure, as in Attempt; Lock names its lock.
	Class string
	Error string
	Lock  string
	// Updates is the number of ref updates the command asked for; -1 when unknown.
	Updates int
	// Refs are the refs the command names. Records list the first 20 and, when
	// there are more, say the list is truncated.
	Refs []string
	// RefsTruncated says that the command names more refs than Refs lists.
	RefsTruncated bool
	GitVersion    string // "2.55.0"; empty when unknown
	RefBackend    string // "files" or "reftable"; empty when unknown
	// Advice is what the person reading should do, when refretry knows (how to remove
	// a stale lock, why git could not be started).
	Advice string
}

func ms(d time.Duration) float64 {
	return float64(d.Round(time.Microsecond)) / float64(time.Millisecond)
}

func fromMS(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }

// bound cuts s to at most n bytes, on a character boundary, marking the cut.
func bound(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && cut < len(s) && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}

func (a Attempt) attrs() []slog.Attr {
	attrs := []slog.Attr{
		slog.Int(keyAttempt, a.Number),
		slog.Float64(keyDurationMS, ms(a.Duration)),
		slog.Int(keyExitCode, a.ExitCode),
	}
	if a.Class != "" {
		attrs = append(attrs, slog.String(keyClass, a.Class))
	}
	if a.Error != "" {
		attrs = append(attrs, slog.String(keyError, bound(a.Error, maxErrorLen)))
	}
	if a.Lock != "" {
		attrs = append(attrs, slog.String(keyLock, bound(a.Lock, maxRefLen*4)))
	}
	if a.LockAge > 0 {
		attrs = append(attrs, slog.Float64(keyLockAgeMS, ms(a.LockAge)))
	}
	if a.HolderPID > 0 {
		attrs = append(attrs, slog.Int(keyHolderPID, a.HolderPID))
	}
	if a.HolderUnseen {
		attrs = append(attrs, slog.Bool(keyHolderUnseen, true))
		if a.PIDNamespace != "" {
			attrs = append(attrs, slog.String(keyPIDNamespace, bound(a.PIDNamespace, 64)))
		}
	}
	if a.Delay > 0 {
		attrs = append(attrs, slog.Float64(keyDelayMS, ms(a.Delay)))
	}
	return append(attrs, slog.Bool(keyFinal, a.Final))
}

func (a Attempt) level() slog.Level {
	if a.Class == "" {
		return slog.LevelInfo
	}
	return slog.LevelWarn
}

func (s Summary) attrs() []slog.Attr {
	attrs := []slog.Attr{
		slog.String(keyResult, string(s.Result)),
		slog.Int(keyExitCode, s.ExitCode),
		slog.Int(keyAttempts, s.Attempts),
		slog.Float64(keyElapsedMS, ms(s.Elapsed)),
	}
	add := func(key, v string, n int) {
		if v != "" {
			attrs = append(attrs, slog.String(key, bound(v, n)))
		}
	}
	add(keyReason, s.Reason, 64)
	add(keyClass, s.Class, 64)
	add(keyError, s.Error, maxErrorLen)
	add(keyLock, s.Lock, maxRefLen*4)
	if s.Updates >= 0 {
		attrs = append(attrs, slog.Int(keyUpdates, s.Updates))
	}
	if s.Refs != nil {
		refs := s.Refs
		truncated := s.RefsTruncated
		if len(refs) > maxRefs {
			refs, truncated = refs[:maxRefs], true
		}
		bounded := make([]string, len(refs))
		for i, r := range refs {
			bounded[i] = bound(r, maxRefLen)
		}
		attrs = append(attrs, slog.Any(keyRefs, bounded), slog.Bool(keyRefsTruncated, truncated))
	}
	add(keyGitVersion, s.GitVersion, 64)
	add(keyRefBackend, s.RefBackend, 64)
	add(keyAdvice, s.Advice, maxAdviceLen)
	return attrs
}

// level is the summary's level: an error unless it succeeded, a warning when it
// succeeded after retrying a failed attempt (retried). A run of several attempts
// that each succeeded or ended for good (a gatherer's lease and wave pushes) is not
// one. Run as git by the shim (Config.Shim), a failure is a warning: it is git's
// failure, for the program that ran git to handle.
func (s Summary) level(retried, shim bool) slog.Level {
	switch {
	case s.Result != ResultSuccess && !shim:
		return slog.LevelError
	case s.Result != ResultSuccess, retried:
		return slog.LevelWarn
	}
	return slog.LevelInfo
}

// plural is "1 attempt", "3 attempts".
func plural(n int, word string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, word)
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// cause is a one-line reason for a failure: "lock-contention on <lock>" or
// "<class>: <git's message>".
func cause(class, lock, msg string) string {
	switch {
	case lock != "":
		return class + " on " + lock
	case msg != "":
		return class + ": " + msg
	}
	return class
}

// headline is the summary of an operation of command in one sentence, without the
// operation id.
func (s Summary) headline(command string) string {
	took := s.Elapsed.Round(time.Millisecond).String()
	var b strings.Builder
	switch s.Result {
	case ResultSuccess:
		if s.Attempts <= 1 {
			fmt.Fprintf(&b, "%s succeeded in %s", command, took)
		} else {
			fmt.Fprintf(&b, "%s succeeded after %s in %s", command, plural(s.Attempts, "attempt"), took)
		}
	case ResultGaveUp:
		fmt.Fprintf(&b, "%s gave up after %s in %s (%s); last failure: %s",
			command, plural(s.Attempts, "attempt"), took, s.Reason, cause(s.Class, s.Lock, s.Error))
	case ResultError:
		fmt.Fprintf(&b, "%s stopped after %s in %s (see the advice)", command, plural(s.Attempts, "attempt"), took)
	default:
		fmt.Fprintf(&b, "%s failed (exit %d) after %s in %s: %s",
			command, s.ExitCode, plural(s.Attempts, "attempt"), took, cause(s.Class, s.Lock, s.Error))
	}
	return b.String()
}
