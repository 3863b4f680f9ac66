package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/refretry/refretry/internal/text"

	"github.com/refretry/refretry/ci"
	"github.com/refretry/refretry/internal/gitexec"
	"github.com/refretry/refretry/retry"
	"github.com/refretry/refretry/transaction"
)

// runLog connects one update-ref run to the ci package. In plain mode (no log option,
// no CI detected, nothing in git config) it only prints the lines refretry always
// printed, through reportAttempt and report, and costs nothing else: no git process,
// no file, no operation id.
//
// Whether a run logs is decided at the first attempt record (or at the end, for a run
// that had none). A log format or file given as a flag or in the environment, or a
// detected CI, is known from the start: git config (for refretry.logFormat,
// refretry.logFile and the ref backend) is then read at that point, and `git version`
// runs alongside the first attempt. Otherwise git config is read only after a
// lock-contention failure, as for every other setting, so refretry.logFormat and
// refretry.logFile alone take effect only for runs that met contention.
type runLog struct {
	ctx  context.Context
	g    *Globals
	e    env
	git  string
	s    Streams
	args transaction.Args

	format  ci.Format // from --log-format or REFRETRY_LOG_FORMAT; "" if neither
	file    string    // from --log-file or REFRETRY_LOG_FILE
	eager   bool      // logging is known to be on from the start
	decided bool

	op      *ci.Operation // nil in plain mode
	logFile *os.File
	stderr  *swapWriter // where the Runner writes git's stderr
	refs    *refTally   // nil unless counting --stdin commands
	version chan string // git version, from a goroutine started when logging is on

	start   time.Time
	count   int // attempts so far, across every retry budget of a --stdin session
	lastErr error
}

// startLog reads the log options given as flags or in the environment; a bad format is
// a usage error. It returns the run's log and the streams the Runner must use.
func startLog(ctx context.Context, g *Globals, e env, git string, s Streams, args transaction.Args) (*runLog, Streams, error) {
	l := &runLog{ctx: ctx, g: g, e: e, git: git, s: s, args: args, start: time.Now(),
		stderr: &swapWriter{w: s.Stderr}}
	v, from := g.LogFormat, "--log-format"
	if v == "" {
		v, from = e.get("REFRETRY_LOG_FORMAT"), "REFRETRY_LOG_FORMAT"
	}
	if v != "" {
		f, err := ci.ParseFormat(v)
		if err != nil {
			return nil, s, &usageError{fmt.Sprintf("%s: %v", from, err)}
		}
		l.format = f
	}
	l.file = g.LogFile
	if l.file == "" {
		l.file = e.get("REFRETRY_LOG_FILE")
	}
	l.eager = l.format != "" && l.format != ci.Auto || l.file != "" || ci.Detect(e.get) != ci.Text
	switch {
	case !l.eager && !args.Understood:
		// git runs once with the caller's own stderr (a terminal stays a terminal), and
		// nothing can turn logging on before it ends.
		return l, s, nil
	case !l.eager:
	case !args.Understood:
		// git runs once, unwrapped, with no attempt record: decide now so that its
		// stderr goes through the relay.
		l.startVersion()
		l.decide()
	default:
		l.startVersion()
		if args.Stdin {
			l.refs = newRefTally(s.Stdin, args.NUL)
			s.Stdin = l.refs
		}
	}
	s.Stderr = l.stderr
	return l, s, nil
}

// startVersion runs `git version` in the background.
func (l *runLog) startVersion() {
	if l.version != nil {
		return
	}
	l.version = make(chan string, 1)
	go func() {
		out, err := gitexec.Command(l.ctx, l.git, nil, l.e, "version").Output()
		v := ""
		if err == nil {
			v = strings.TrimPrefix(strings.TrimSpace(string(out)), "git version ")
		}
		l.version <- v
	}()
}

// decide chooses the destinations once: the format from flag, environment or git
// config (auto when none says), the log file likewise.
func (l *runLog) decide() {
	if l.decided {
		return
	}
	l.decided = true
	cfg := l.g.config // nil unless git config has been read for the retry settings
	if l.eager {
		cfg = readConfig(l.ctx, l.g, l.e, l.git)
	}
	format, explicit := l.format, l.format != ""
	if !explicit && cfg["refretry.logformat"] != "" {
		f, err := ci.ParseFormat(cfg["refretry.logformat"])
		if err != nil {
			fmt.Fprintf(l.s.Stderr, "refretry: git config refretry.logFormat: %v\n", err)
		} else {
			format, explicit = f, true
		}
	}
	file := l.file
	if file == "" {
		file = cfg["refretry.logfile"]
	}
	// Text chosen by auto is plain mode: the lines refretry always printed. Text asked
	// for by name adds a summary line with the operation id.
	stderrFormat := format.Resolve(l.e.get)
	if stderrFormat == ci.Text && format != ci.Text {
		stderrFormat = ""
	}
	if stderrFormat == "" && file == "" {
		return
	}
	l.op, l.logFile = openOperation("update-ref", l.s.Stderr, stderrFormat, file, l.e.get)
	if l.op == nil {
		return
	}
	l.stderr.set(l.op.Relay())
	l.startVersion()
}

// openOperation starts an operation's log with records in format on stderr ("" for
// none) and JSON lines appended to file ("" for none). It returns a nil operation
// when there is nowhere to write; a log file it cannot open, or any other failure, is
// reported on stderr and leaves the rest working. The caller closes the file.
func openOperation(command string, stderr io.Writer, format ci.Format, file string, getenv func(string) string) (*ci.Operation, *os.File) {
	var f *os.File
	var logFile io.Writer
	if file != "" {
		var err error
		if f, err = ci.OpenLogFile(file); err != nil {
			fmt.Fprintf(stderr, "refretry: %v\n", err)
			f = nil
		} else {
			logFile = f
		}
	}
	if format == "" && logFile == nil {
		return nil, nil
	}
	op, err := ci.New(ci.Config{Command: command, Format: format, Stderr: stderr, LogFile: logFile, Getenv: getenv})
	if err != nil {
		fmt.Fprintf(stderr, "refretry: %v\n", err)
		if f != nil {
			f.Close()
		}
		return nil, nil
	}
	return op, f
}

// legacy reports whether refretry's own plain lines go to stderr: in plain mode, and
// when only a log file was asked for.
func (l *runLog) legacy() bool { return l.op == nil || l.op.Format() == "" }

// attempt is the Runner's OnAttempt.
func (l *runLog) attempt(a retry.Attempt) {
	l.count++
	l.lastErr = a.Err
	l.decide()
	if l.legacy() {
		reportAttempt(l.s.Stderr, a, cause)
	}
	if l.op != nil {
		l.logError(l.op.Attempt(l.ctx, attemptRecord(l.count, a)))
	}
}

// finish reports the end of the run: refretry's plain line when it has one, and the
// summary record.
func (l *runLog) finish(code int, err error) {
	l.decide()
	if l.legacy() && err != nil {
		report(l.s.Stderr, l.git, err)
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
		l.count = 1
		l.logError(l.op.Attempt(l.ctx, attemptRecord(1, retry.Attempt{
			Number: 1, Duration: elapsed, Err: err, Final: true})))
	}
	sum := summaryRecord(l.count, code, elapsed, l.git, err)
	sum.Updates, sum.Refs, sum.RefsTruncated = l.updates()
	if !errors.Is(err, transaction.ErrGitNotFound) {
		sum.RefBackend = "files" // unless the repository's extensions.refStorage says otherwise
		if l.g.config["extensions.refstorage"] == "reftable" {
			sum.RefBackend = "reftable"
		}
	}
	if l.version != nil {
		sum.GitVersion = <-l.version
	}
	l.logError(l.op.Finish(l.ctx, sum))
}

func (l *runLog) logError(err error) {
	if err != nil {
		fmt.Fprintf(l.s.Stderr, "refretry: log: %v\n", err)
	}
}

// updates counts the ref updates the command asks for and names their refs.
func (l *runLog) updates() (n int, refs []string, truncated bool) {
	switch {
	case l.refs != nil:
		return l.refs.result()
	case !l.args.Understood || l.args.Stdin:
		return -1, nil, false
	}
	if ref := operandRef(l.args.Raw); ref != "" {
		return 1, []string{ref}, false
	}
	return -1, nil, false
}

// attemptRecord turns the retry loop's report into an attempt record.
func attemptRecord(n int, a retry.Attempt) ci.Attempt {
	rec := ci.Attempt{Number: n, Duration: a.Duration, Delay: a.Delay, Final: a.Final}
	var te *transaction.Error
	switch {
	case a.Err == nil:
	case errors.As(a.Err, &te):
		rec.ExitCode, rec.Class, rec.Error = te.ExitCode, string(te.Class), text.FirstLine(te.Message)
		var lk *transaction.LockedError
		if errors.As(a.Err, &lk) {
			rec.Lock, rec.LockAge, rec.HolderPID = lk.Lock, lk.Age, lk.PID
		}
	default:
		rec.ExitCode, rec.Class, rec.Error = exitFatal, string(transaction.ClassOther), text.FirstLine(a.Err.Error())
		if errors.Is(a.Err, transaction.ErrGitNotFound) {
			rec.ExitCode = exitGitMissing
		}
	}
	return rec
}

// summaryRecord describes how the run ended; count is the number of attempts.
func summaryRecord(count, code int, elapsed time.Duration, git string, err error) ci.Summary {
	s := ci.Summary{Result: ci.ResultSuccess, ExitCode: code, Attempts: count, Elapsed: elapsed, Updates: -1}
	if err == nil {
		return s
	}
	var ex *retry.ExhaustedError
	var te *transaction.Error
	var lk *transaction.LockedError
	if errors.As(err, &te) {
		s.Class, s.Error = string(te.Class), text.FirstLine(te.Message)
		if errors.As(err, &lk) {
			s.Lock = lk.Lock
		}
	}
	_, direct := err.(*transaction.Error) // git's failure, not wrapped in one of refretry's
	switch {
	case errors.Is(err, transaction.ErrGitNotFound):
		s.Result, s.ExitCode = ci.ResultError, exitGitMissing
		var se *transaction.StartError
		if errors.As(err, &se) {
			s.Advice = fmt.Sprintf("cannot run git (%s): %v", git, se.Err)
		}
	case errors.As(err, &ex):
		s.Result, s.Reason, s.Attempts = ci.ResultGaveUp, string(ex.Reason), max(count, ex.Attempts)
	case direct && te.Class == transaction.ClassStaleLock && lk != nil:
		s.Result, s.Advice = ci.ResultStaleLock, staleAdvice(lk)
	case direct:
		s.Result = ci.ResultFailed
	default:
		s.Result, s.Advice = ci.ResultError, err.Error()
		if s.ExitCode == 0 {
			s.ExitCode = exitFatal
		}
	}
	return s
}

// operandRef returns the ref a one-ref or -d update-ref command line names: its first
// operand.
func operandRef(raw []string) string {
	for i := 0; i < len(raw); i++ {
		a := raw[i]
		switch {
		case a == "--" || a == "--end-of-options":
			if i+1 < len(raw) {
				return raw[i+1]
			}
			return ""
		case a == "-m":
			i++ // its value
		case strings.HasPrefix(a, "-") && len(a) > 1:
			if j := strings.IndexByte(a, 'm'); j > 0 && !strings.HasPrefix(a, "--") && j == len(a)-1 {
				i++ // a bundle ending in -m: the value is the next argument
			}
		default:
			return a
		}
	}
	return ""
}

// swapWriter is the Runner's stderr: the caller's, or the log's relay once logging
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

// refTally counts the updates in --stdin input as the Runner reads it, framing the
// commands with transaction.Reader so that it sees them exactly as git does.
type refTally struct {
	src  io.Reader
	pw   *io.PipeWriter
	done chan struct{}

	updates   int
	refs      []string
	truncated bool
}

func newRefTally(src io.Reader, nul bool) *refTally {
	pr, pw := io.Pipe()
	t := &refTally{src: src, pw: pw, done: make(chan struct{})}
	go t.count(transaction.NewReader(pr, nul), nul)
	return t
}

func (t *refTally) Read(p []byte) (int, error) {
	n, err := t.src.Read(p)
	if n > 0 {
		_, _ = t.pw.Write(p[:n]) // fails only once result has closed the pipe
	}
	return n, err
}

func (t *refTally) count(rd *transaction.Reader, nul bool) {
	defer close(t.done)
	var buf []byte
	for {
		cmd, _, err := rd.Next(buf[:0])
		buf = cmd
		term := byte('\n')
		if nul {
			term = 0
		}
		verb, rest, _ := strings.Cut(string(cmd), " ")
		switch verb {
		case "update", "create", "delete", "symref-update", "symref-create", "symref-delete":
			ref, _, _ := strings.Cut(rest, string(term))
			if !nul {
				ref, _, _ = strings.Cut(ref, " ")
			}
			t.updates++
			if len(t.refs) < ci.MaxRefs {
				t.refs = append(t.refs, ref)
			} else {
				t.truncated = true
			}
		}
		if err != nil {
			return
		}
	}
}

// result stops counting (the Runner has read all it will) and returns the tally.
func (t *refTally) result() (int, []string, bool) {
	t.pw.Close()
	<-t.done
	return t.updates, t.refs, t.truncated
}
