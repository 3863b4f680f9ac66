package report

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/refretry/refretry/ci"
	"github.com/refretry/refretry/failure"
	"github.com/refretry/refretry/internal/platform"
	"github.com/refretry/refretry/retry"
)

// Config is one run of a command, as its reports need it.
type Config struct {
	Command string              // "update-ref", "push", "fetch", "gather land", …: records and lines name it
	Stderr  io.Writer           // the caller's standard error
	Getenv  func(string) string // the caller's environment (CI detection, GitHub's files)
	Git     string              // the git executable, for the line about one that could not start
	// Shim says the run is a git command run through the git shim, for the program
	// that ran git: its failure is git's, recorded as a warning (ci.Config.Shim).
	Shim bool

	// Format and File are the log format and log file given as a flag or in the
	// environment ("" for neither; Format may be "auto").
	Format ci.Format
	File   string
	// Configured returns the format and file git config asks for ("" for none), for
	// use where Format or File is "". With read false it answers only from git config
	// read already (for the retry settings): reading costs a git process.
	Configured func(read bool) (ci.Format, string)
	// Version looks up git's version, for the summary. It is called, in the
	// background, only once records are being written.
	Version func() string
}

// Log reports one run. In plain mode (no log format or file asked for anywhere, no
// CI detected) it prints only refretry's plain lines and costs nothing else: no git
// process, no file, no operation id.
//
// Whether a run logs is decided at its first attempt (or at its end, for a run that
// had none). A format or file given as a flag or in the environment, or a detected
// CI, is known from the start: git config is then read at that point, and git's
// version looked up meanwhile. Otherwise git config is consulted only if the run
// already read it for its retry settings (after a lock-contention failure).
type Log struct {
	c       Config
	eager   bool
	decided bool
	start   time.Time

	op      *ci.Operation // nil in plain mode
	logFile *os.File
	stderr  *swapWriter
	version chan string

	count int // attempts so far, across every retry budget of the run
}

// Start begins a run's reports.
func Start(c Config) *Log {
	if c.Getenv == nil {
		c.Getenv = func(string) string { return "" }
	}
	return &Log{
		c: c, start: time.Now(), stderr: &swapWriter{w: c.Stderr},
		eager: c.Format != "" && c.Format != "auto" || c.File != "" || ci.Detect(c.Getenv) != "text",
	}
}

// Eager reports whether logging is known to be on from the start.
func (l *Log) Eager() bool { return l.eager }

// Stderr is where the command writes git's stderr: the caller's, or, once records
// are written, the operation's relay.
func (l *Log) Stderr() io.Writer { return l.stderr }

// Decide chooses the destinations now: for a run that will have no attempt record
// (git run once, unwrapped), so that its stderr goes through the relay from the start.
func (l *Log) Decide() { l.decide() }

func (l *Log) decide() {
	if l.decided {
		return
	}
	l.decided = true
	format, file := l.c.Format, l.c.File
	if l.c.Configured != nil && (format == "" || file == "") {
		f, name := l.c.Configured(l.eager)
		if format == "" {
			format = f
		}
		if file == "" {
			file = name
		}
	}
	// Text chosen by auto is plain mode: the lines refretry always printed. Text asked
	// for by name adds a summary line with the operation id.
	stderrFormat := format.Resolve(l.c.Getenv)
	if stderrFormat == "text" && format != "text" {
		stderrFormat = ""
	}
	if stderrFormat == "" && file == "" {
		return
	}
	l.open(stderrFormat, file)
	if l.op == nil {
		return
	}
	l.stderr.set(l.op.Relay())
	if l.c.Version != nil {
		l.version = make(chan string, 1)
		go func() { l.version <- l.c.Version() }()
	}
}

// open starts the operation's log with records in format on stderr ("" for none)
// and JSON lines appended to file ("" for none). A log file that cannot be opened, or
// any other failure, is reported on stderr and leaves the rest working.
func (l *Log) open(format ci.Format, file string) {
	var logFile io.Writer
	if file != "" {
		f, err := ci.OpenLogFile(file)
		if err != nil {
			fmt.Fprintf(l.c.Stderr, "refretry: %v\n", err)
		} else {
			l.logFile, logFile = f, f
		}
	}
	if format == "" && logFile == nil {
		return
	}
	op, err := ci.New(ci.Config{Command: l.c.Command, Shim: l.c.Shim, Format: format, Stderr: l.c.Stderr, LogFile: logFile, Getenv: l.c.Getenv})
	if err != nil {
		fmt.Fprintf(l.c.Stderr, "refretry: %v\n", err)
		if l.logFile != nil {
			l.logFile.Close()
			l.logFile = nil
		}
		return
	}
	l.op = op
}

// plain reports whether refretry's plain lines go to stderr: in plain mode, and when
// only a log file was asked for.
func (l *Log) plain() bool { return l.op == nil || l.op.Format() == "" }

// Attempt reports one finished attempt (the retry loop's OnAttempt). Attempts are
// numbered across the whole run, in the plain lines and the records alike.
func (l *Log) Attempt(a retry.Attempt) {
	l.count++
	a.Number = l.count
	l.decide()
	if l.plain() && !a.Final && a.Err != nil {
		fmt.Fprintf(l.c.Stderr, "refretry: attempt %d failed (%s); retrying in %v\n",
			a.Number, reason(a.Err), a.Delay.Round(time.Millisecond))
	}
	if l.op != nil {
		l.logError(l.op.Attempt(context.Background(), attemptRecord(a)))
	}
}

// Note reports something the command did besides running git (a removed stale lock,
// a rebase): "refretry: <text>" in plain mode, a note record otherwise.
func (l *Log) Note(kind, text string) {
	l.decide()
	if l.plain() {
		fmt.Fprintf(l.c.Stderr, "refretry: %s\n", text)
	}
	if l.op != nil {
		l.logError(l.op.Note(context.Background(), kind, text))
	}
}

// Refs are the refs a run updates, for its summary.
type Refs struct {
	Updates   int      // how many updates the command asked for; -1 when unknown
	Names     []string // the refs (a summary lists the first 20)
	Truncated bool     // there were more than Names lists
	Backend   string   // the repository's ref backend, "" when unknown
}

// Finish reports how the run ended: refretry's plain line when it has one, and the
// summary record. code is the exit code the run ends with; refs is called only for
// the summary.
func (l *Log) Finish(code int, err error, refs func() Refs) { l.finish(code, err, refs, l.finalLine) }

// FinishSaying is Finish for a command whose errors are sentences of its own that
// say what it was doing (`gather land`'s, say): its plain line is "refretry: <err>",
// whatever err wraps, instead of Finish's reading of a failure.
func (l *Log) FinishSaying(code int, err error, refs func() Refs) {
	l.finish(code, err, refs, func(err error) { fmt.Fprintf(l.c.Stderr, "refretry: %v\n", err) })
}

func (l *Log) finish(code int, err error, refs func() Refs, line func(error)) {
	l.decide()
	if l.plain() && err != nil {
		line(err)
	}
	if l.op == nil {
		return
	}
	if l.logFile != nil {
		defer l.logFile.Close()
	}
	elapsed := time.Since(l.start)
	if l.count == 0 {
		// git ran once, unwrapped (arguments refretry does not read), with no record.
		l.Attempt(retry.Attempt{Number: 1, Duration: elapsed, Err: err, Final: true})
	}
	s := l.summary(code, elapsed, err)
	r := refs()
	s.Updates, s.Refs, s.RefsTruncated, s.RefBackend = r.Updates, r.Names, r.Truncated, r.Backend
	if _, missing := gitMissing(err); missing {
		s.RefBackend = ""
	}
	if l.version != nil {
		s.GitVersion = <-l.version
	}
	l.logError(l.op.Finish(context.Background(), s))
}

// finalLine prints refretry's own line about a final failure, after git's output:
// why git could not run, why the retry loop stopped, or the failure's advice.
// Failures git alone explains get nothing extra.
func (l *Log) finalLine(err error) {
	resolve, exhausted := loopEnd(err)
	f := asFailure(err)
	switch why, missing := gitMissing(err); {
	case missing:
		fmt.Fprintf(l.c.Stderr, "refretry: cannot run git (%s): %v\n", l.c.Git, why)
	case resolve != nil:
		fmt.Fprintf(l.c.Stderr, "refretry: not retried: %v\n", resolve.Err)
	case exhausted != nil:
		fmt.Fprintf(l.c.Stderr, "refretry: gave up after %s in %v (%s); last failure: %s\n",
			attempts(max(l.count, exhausted.Attempts)), exhausted.Elapsed.Round(time.Millisecond), exhausted.Reason,
			reason(exhausted.Err))
		// Why a lock that git or its ~pid.lock calls abandoned was waited for.
		if f != nil && f.Advice != "" {
			fmt.Fprintf(l.c.Stderr, "refretry: %s\n", f.Advice)
		}
	case f != nil:
		if f.Advice != "" {
			fmt.Fprintf(l.c.Stderr, "refretry: %s\n", f.Advice)
		}
	default:
		fmt.Fprintf(l.c.Stderr, "refretry: %v\n", err)
	}
}

func (l *Log) logError(err error) {
	if err != nil {
		fmt.Fprintf(l.c.Stderr, "refretry: log: %v\n", err)
	}
}

// attemptRecord turns the retry loop's report into an attempt record.
func attemptRecord(a retry.Attempt) ci.Attempt {
	rec := ci.Attempt{Number: a.Number, Duration: a.Duration, Delay: a.Delay, Final: a.Final}
	f := asFailure(a.Err)
	switch {
	case a.Err == nil:
	case f != nil:
		rec.ExitCode, rec.Class, rec.Error = f.ExitCode, string(f.Class), f.Line()
		if l := f.Lock; l != nil {
			rec.Lock, rec.LockAge, rec.HolderPID = l.Path, l.Age, l.PID
			if l.Remote {
				rec.LockAge = 0 // a remote lock's age is the server's, unknown here
			}
			if l.PID > 0 && l.HolderUnseen {
				rec.HolderUnseen = true
				if platform.OwnPIDNamespace() {
					rec.PIDNamespace = "container"
				}
			}
		}
	default:
		firstLine, _, _ := strings.Cut(a.Err.Error(), "\n")
		rec.ExitCode, rec.Class, rec.Error = ExitFatal, "other", firstLine
		if _, missing := gitMissing(a.Err); missing {
			rec.ExitCode = ExitGitMissing
		}
	}
	return rec
}

// summary describes how the run ended.
func (l *Log) summary(code int, elapsed time.Duration, err error) ci.Summary {
	s := ci.Summary{Result: ci.ResultSuccess, ExitCode: code, Attempts: max(l.count, 1), Elapsed: elapsed, Updates: -1}
	if err == nil {
		return s
	}
	f := asFailure(err)
	if f != nil {
		s.Class, s.Error = string(f.Class), f.Line()
		if f.Lock != nil {
			s.Lock = f.Lock.Path
		}
	}
	resolve, exhausted := loopEnd(err)
	switch why, missing := gitMissing(err); {
	case missing:
		s.Result, s.ExitCode = ci.ResultError, ExitGitMissing
		s.Advice = fmt.Sprintf("cannot run git (%s): %v", l.c.Git, why)
	case resolve != nil:
		s.Result, s.Advice = ci.ResultError, "not retried: "+resolve.Err.Error()
	case exhausted != nil:
		s.Result, s.Reason, s.Attempts = ci.ResultGaveUp, string(exhausted.Reason), max(s.Attempts, exhausted.Attempts)
		if f != nil {
			s.Advice = f.Advice
		}
	case f != nil && f.Class == failure.StaleLock:
		s.Result, s.Advice = ci.ResultStaleLock, f.Advice
	case f != nil:
		s.Result, s.Advice = ci.ResultFailed, f.Advice
	default:
		s.Result, s.Advice = ci.ResultError, err.Error()
		if s.ExitCode == 0 {
			s.ExitCode = ExitFatal
		}
	}
	return s
}

// attempts is "1 attempt" or "N attempts".
func attempts(n int) string {
	if n == 1 {
		return "1 attempt"
	}
	return fmt.Sprintf("%d attempts", n)
}

// swapWriter is a command's stderr: the caller's, or the log's relay once logging
// is on.
type swapWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *swapWriter) set(w io.Writer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.w = w
}

func (s *swapWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
