package ci

import (
	"fmt"
	"log/slog"
	"strings"
	"time"
)

// SchemaVersion is the version of the record schema, carried by every record as
// "schema". It changes only when a field is removed or changes meaning; new optional
// fields do not change it.
const SchemaVersion = 1

// The records' messages.
const (
	MsgAttempt = "attempt"
	MsgSummary = "summary"
	MsgNote    = "note"
)

// Attribute keys, as they appear in JSON records (docs/logging.md documents them).
const (
	KeySchema        = "schema"
	KeyOperationID   = "operation_id"
	KeyCommand       = "command"
	KeyAttempt       = "attempt"
	KeyDurationMS    = "duration_ms"
	KeyExitCode      = "exit_code"
	KeyClass         = "class"
	KeyError         = "error"
	KeyLock          = "lock"
	KeyLockAgeMS     = "lock_age_ms"
	KeyHolderPID     = "holder_pid"
	KeyHolderUnseen  = "holder_unseen"
	KeyPIDNamespace  = "pid_namespace"
	KeyDelayMS       = "delay_ms"
	KeyFinal         = "final"
	KeyResult        = "result"
	KeyAttempts      = "attempts"
	KeyElapsedMS     = "elapsed_ms"
	KeyReason        = "reason"
	KeyUpdates       = "updates"
	KeyRefs          = "refs"
	KeyRefsTruncated = "refs_truncated"
	KeyGitVersion    = "git_version"
	KeyRefBackend    = "ref_backend"
	KeyAdvice        = "advice"
	KeyKind          = "kind"
	KeyText          = "text"
)

// Bounds on what one record carries, so that a line stays short.
const (
	MaxRefs      = 20   // refs listed in a summary
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

// Note is something refretry did besides running git, between attempts or around
// them: a stale lock it removed, a rebase, a regeneration, a gather.
type Note struct {
	Kind string // a short stable name: "stale-lock-removed", "rebase", "gather", …
	Text string // one line for people, without "refretry: "
}

func (n Note) attrs() []slog.Attr {
	return []slog.Attr{slog.String(KeyKind, bound(n.Kind, 64)), slog.String(KeyText, bound(n.Text, maxAdviceLen))}
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

// Summary is the outcome of an operation.
type Summary struct {
	// Command is the refretry command the operation ran ("update-ref", "push", "fetch"); the
	// Operation fills it in.
	Command  string
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
	// Refs are the refs the command names, at most MaxRefs of them.
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
		slog.Int(KeyAttempt, a.Number),
		slog.Float64(KeyDurationMS, ms(a.Duration)),
		slog.Int(KeyExitCode, a.ExitCode),
	}
	if a.Class != "" {
		attrs = append(attrs, slog.String(KeyClass, a.Class))
	}
	if a.Error != "" {
		attrs = append(attrs, slog.String(KeyError, bound(a.Error, maxErrorLen)))
	}
	if a.Lock != "" {
		attrs = append(attrs, slog.String(KeyLock, bound(a.Lock, maxRefLen*4)))
	}
	if a.LockAge > 0 {
		attrs = append(attrs, slog.Float64(KeyLockAgeMS, ms(a.LockAge)))
	}
	if a.HolderPID > 0 {
		attrs = append(attrs, slog.Int(KeyHolderPID, a.HolderPID))
	}
	if a.HolderUnseen {
		attrs = append(attrs, slog.Bool(KeyHolderUnseen, true))
		if a.PIDNamespace != "" {
			attrs = append(attrs, slog.String(KeyPIDNamespace, bound(a.PIDNamespace, 64)))
		}
	}
	if a.Delay > 0 {
		attrs = append(attrs, slog.Float64(KeyDelayMS, ms(a.Delay)))
	}
	return append(attrs, slog.Bool(KeyFinal, a.Final))
}

func (a Attempt) level() slog.Level {
	if a.Class == "" {
		return slog.LevelInfo
	}
	return slog.LevelWarn
}

func (s Summary) attrs() []slog.Attr {
	attrs := []slog.Attr{
		slog.String(KeyResult, string(s.Result)),
		slog.Int(KeyExitCode, s.ExitCode),
		slog.Int(KeyAttempts, s.Attempts),
		slog.Float64(KeyElapsedMS, ms(s.Elapsed)),
	}
	add := func(key, v string, n int) {
		if v != "" {
			attrs = append(attrs, slog.String(key, bound(v, n)))
		}
	}
	add(KeyReason, s.Reason, 64)
	add(KeyClass, s.Class, 64)
	add(KeyError, s.Error, maxErrorLen)
	add(KeyLock, s.Lock, maxRefLen*4)
	if s.Updates >= 0 {
		attrs = append(attrs, slog.Int(KeyUpdates, s.Updates))
	}
	if s.Refs != nil {
		refs := s.Refs
		truncated := s.RefsTruncated
		if len(refs) > MaxRefs {
			refs, truncated = refs[:MaxRefs], true
		}
		bounded := make([]string, len(refs))
		for i, r := range refs {
			bounded[i] = bound(r, maxRefLen)
		}
		attrs = append(attrs, slog.Any(KeyRefs, bounded), slog.Bool(KeyRefsTruncated, truncated))
	}
	add(KeyGitVersion, s.GitVersion, 64)
	add(KeyRefBackend, s.RefBackend, 64)
	add(KeyAdvice, s.Advice, maxAdviceLen)
	return attrs
}

func (s Summary) level() slog.Level {
	switch {
	case s.Result != ResultSuccess:
		return slog.LevelError
	case s.Attempts > 1:
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

func (s Summary) command() string {
	if s.Command == "" {
		return "refretry"
	}
	return s.Command
}

// Headline is the summary in one sentence, without the operation id.
func (s Summary) Headline() string {
	took := s.Elapsed.Round(time.Millisecond).String()
	var b strings.Builder
	switch s.Result {
	case ResultSuccess:
		if s.Attempts <= 1 {
			fmt.Fprintf(&b, "%s succeeded in %s", s.command(), took)
		} else {
			fmt.Fprintf(&b, "%s succeeded after %s in %s", s.command(), plural(s.Attempts, "attempt"), took)
		}
	case ResultGaveUp:
		fmt.Fprintf(&b, "%s gave up after %s in %s (%s); last failure: %s",
			s.command(), plural(s.Attempts, "attempt"), took, s.Reason, cause(s.Class, s.Lock, s.Error))
	case ResultError:
		fmt.Fprintf(&b, "%s stopped after %s in %s (see the advice)", s.command(), plural(s.Attempts, "attempt"), took)
	default:
		fmt.Fprintf(&b, "%s failed (exit %d) after %s in %s: %s",
			s.command(), s.ExitCode, plural(s.Attempts, "attempt"), took, cause(s.Class, s.Lock, s.Error))
	}
	return b.String()
}
