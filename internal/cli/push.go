package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/refretry/refretry/internal/text"

	"github.com/refretry/refretry/ci"
	"github.com/refretry/refretry/internal/gitexec"
	"github.com/refretry/refretry/push"
	"github.com/refretry/refretry/retry"
)

// PushCmd runs git push with the caller's arguments, atomically unless told otherwise,
// retrying remote lock contention and transport failures.
type PushCmd struct {
	// Args are refretry's push options (--no-atomic, --rebase) and git push's
	// arguments, verbatim; run fills them in, kong never sees them.
	Args []string `kong:"-"`
}

// pushOwnOptions are the push options that are refretry's, not git's. They may appear
// anywhere before "--" and are taken out before git sees the arguments.
var pushOwnOptions = map[string]bool{"--no-atomic": true, "--rebase": true}

// splitPushArgs takes refretry's own push options out of args.
func splitPushArgs(args []string) (noAtomic, rebase bool, rest []string) {
	rest = make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return noAtomic, rebase, append(rest, args[i:]...)
		case a == "-o" || a == "--push-option" || a == "--receive-pack" || a == "--exec" || a == "--repo":
			rest = append(rest, a) // its value is git's, whatever it looks like
			if i+1 < len(args) {
				i++
				rest = append(rest, args[i])
			}
			continue
		case pushOwnOptions[a]:
			noAtomic = noAtomic || a == "--no-atomic"
			rebase = rebase || a == "--rebase"
			continue
		}
		rest = append(rest, a)
	}
	return noAtomic, rebase, rest
}

// Run runs the push.
func (c *PushCmd) Run(ctx context.Context, g *Globals, s Streams, e env) error {
	arm(ctx) // a push may take long: catch signals from the start (main.go)
	if err := checkFlags(g, e); err != nil {
		return err
	}
	git := gitPath(g, e)
	noAtomic, rebase, rest := splitPushArgs(c.Args)
	lg, err := startPushLog(ctx, g, e, git, s)
	if err != nil {
		return err
	}
	p := &push.Runner{
		Git: git, Dirs: g.Dirs, Env: e,
		Stdout: s.Stdout, Stderr: lg.stderr,
		NoAtomic: noAtomic, Rebase: rebase,
		Policy: func() (retry.Policy, error) {
			st, err := resolveSettings(ctx, g, e, git)
			return st.Policy, err
		},
		OnAttempt: lg.attempt,
		Notify:    func(msg string) { fmt.Fprintf(s.Stderr, "refretry: %s\n", msg) },
	}
	code, err := p.Run(ctx, rest)
	lg.refs = p.Report.Refs
	lg.finish(code, err)
	if errors.Is(err, push.ErrGitNotFound) {
		return exitError(exitGitMissing)
	}
	if code != 0 {
		return exitError(code)
	}
	return nil
}

// pushLog connects one push to the ci package, with the same rules as update-ref's
// runLog (docs/logging.md): plain refretry lines unless a log format or file is asked
// for (flag, environment, or git config once it has been read for the retry settings)
// or a CI is detected; then attempt and summary records, and git's stderr through the
// operation's relay.
type pushLog struct {
	ctx context.Context
	g   *Globals
	e   env
	git string
	s   Streams

	format  ci.Format
	file    string
	eager   bool
	decided bool
	op      *ci.Operation
	logFile *os.File
	stderr  *swapWriter // the Runner's stderr: the caller's, or the relay

	start   time.Time
	count   int
	lastErr error
	refs    []push.RefStatus // the final attempt's refs, for the summary
}

func startPushLog(ctx context.Context, g *Globals, e env, git string, s Streams) (*pushLog, error) {
	l := &pushLog{ctx: ctx, g: g, e: e, git: git, s: s, start: time.Now(), stderr: &swapWriter{w: s.Stderr}}
	v, from := g.LogFormat, "--log-format"
	if v == "" {
		v, from = e.get("REFRETRY_LOG_FORMAT"), "REFRETRY_LOG_FORMAT"
	}
	if v != "" {
		f, err := ci.ParseFormat(v)
		if err != nil {
			return nil, &usageError{fmt.Sprintf("%s: %v", from, err)}
		}
		l.format = f
	}
	l.file = g.LogFile
	if l.file == "" {
		l.file = e.get("REFRETRY_LOG_FILE")
	}
	l.eager = l.format != "" && l.format != ci.Auto || l.file != "" || ci.Detect(e.get) != ci.Text
	return l, nil
}

// decide chooses the destinations once, at the first attempt record.
func (l *pushLog) decide() {
	if l.decided {
		return
	}
	l.decided = true
	cfg := l.g.config
	if l.eager {
		cfg = readConfig(l.ctx, l.g, l.e, l.git)
	}
	format := l.format
	explicit := format != ""
	if !explicit && cfg["refretry.logformat"] != "" {
		f, err := ci.ParseFormat(cfg["refretry.logformat"])
		if err != nil {
			fmt.Fprintf(l.s.Stderr, "refretry: git config refretry.logFormat: %v\n", err)
		} else {
			format = f
		}
	}
	file := l.file
	if file == "" {
		file = cfg["refretry.logfile"]
	}
	stderrFormat := format.Resolve(l.e.get)
	if stderrFormat == ci.Text && format != ci.Text {
		stderrFormat = "" // auto chose text: refretry's plain lines
	}
	l.op, l.logFile = openOperation("push", l.s.Stderr, stderrFormat, file, l.e.get) // logging.go
	if l.op != nil {
		l.stderr.set(l.op.Relay())
	}
}

func (l *pushLog) legacy() bool { return l.op == nil || l.op.Format() == "" }

// attempt is the Runner's OnAttempt.
func (l *pushLog) attempt(a retry.Attempt) {
	l.count++
	l.lastErr = a.Err
	l.decide()
	if l.legacy() {
		reportAttempt(l.s.Stderr, a, pushCause)
	}
	if l.op != nil {
		l.logError(l.op.Attempt(l.ctx, pushAttemptRecord(a)))
	}
}

// finish prints refretry's line about the outcome, or the summary record.
func (l *pushLog) finish(code int, err error) {
	l.decide()
	if l.legacy() && err != nil {
		reportPush(l.s.Stderr, l.git, err)
	}
	if l.op == nil {
		return
	}
	if l.logFile != nil {
		defer l.logFile.Close()
	}
	sum := pushSummary(max(l.count, 1), code, time.Since(l.start), l.git, err)
	if err == nil {
		for _, r := range l.refs {
			if r.Rejected() {
				continue
			}
			if len(sum.Refs) == ci.MaxRefs {
				sum.RefsTruncated = true
				break
			}
			sum.Refs = append(sum.Refs, r.To)
		}
		sum.Updates = len(l.refs)
	}
	if out, verr := gitexec.Command(l.ctx, l.git, nil, l.e, "version").Output(); verr == nil {
		sum.GitVersion = strings.TrimPrefix(strings.TrimSpace(string(out)), "git version ")
	}
	l.logError(l.op.Finish(l.ctx, sum))
}

func (l *pushLog) logError(err error) {
	if err != nil {
		fmt.Fprintf(l.s.Stderr, "refretry: log: %v\n", err)
	}
}

// pushAttemptRecord turns the retry loop's report into an attempt record.
func pushAttemptRecord(a retry.Attempt) ci.Attempt {
	rec := ci.Attempt{Number: a.Number, Duration: a.Duration, Delay: a.Delay, Final: a.Final}
	var pe *push.Error
	var re *push.RebaseError
	switch {
	case a.Err == nil:
	case errors.As(a.Err, &pe):
		rec.ExitCode, rec.Class, rec.Error = pe.ExitCode, string(pe.Class), pe.Message
		var lk *push.LockedError
		if errors.As(a.Err, &lk) {
			rec.Lock, rec.HolderPID = lk.Lock, lk.PID
		}
	case errors.As(a.Err, &re):
		rec.ExitCode, rec.Class, rec.Error = 1, "rebase", text.FirstLine(re.Error())
	default:
		rec.ExitCode, rec.Class, rec.Error = exitFatal, string(push.ClassOther), text.FirstLine(a.Err.Error())
		if errors.Is(a.Err, push.ErrGitNotFound) {
			rec.ExitCode = exitGitMissing
		}
	}
	return rec
}

// pushSummary describes how the push ended.
func pushSummary(count, code int, elapsed time.Duration, git string, err error) ci.Summary {
	s := ci.Summary{Result: ci.ResultSuccess, ExitCode: code, Attempts: count, Elapsed: elapsed, Updates: -1}
	if err == nil {
		return s
	}
	var ex *retry.ExhaustedError
	var rs *retry.ResolveError
	var pe *push.Error
	var re *push.RebaseError
	var lk *push.LockedError
	if errors.As(err, &pe) {
		s.Class, s.Error = string(pe.Class), pe.Message
		for _, r := range pe.Refs {
			if len(s.Refs) == ci.MaxRefs {
				s.RefsTruncated = true
				break
			}
			s.Refs = append(s.Refs, r.To)
		}
		s.Updates = len(pe.Refs)
		if errors.As(err, &lk) {
			s.Lock = lk.Lock
		}
	}
	switch {
	case errors.Is(err, push.ErrGitNotFound):
		s.Result, s.ExitCode = ci.ResultError, exitGitMissing
		var se *push.StartError
		if errors.As(err, &se) {
			s.Advice = fmt.Sprintf("cannot run git (%s): %v", git, se.Err)
		}
	case errors.As(err, &rs):
		s.Result, s.Advice = ci.ResultError, "not retried: "+rs.Err.Error()
	case errors.As(err, &ex):
		s.Result, s.Reason, s.Attempts = ci.ResultGaveUp, string(ex.Reason), max(count, ex.Attempts)
	case errors.As(err, &re):
		s.Result, s.Class, s.Error, s.Advice = ci.ResultFailed, "rebase", text.FirstLine(re.Error()), "integrate the remote changes by hand"
	case pe != nil && pe.Class == push.ClassStaleLock:
		s.Result, s.Advice = ci.ResultStaleLock, "the remote's lock belongs to a process that is gone: remove it on the server"
	case pe != nil:
		s.Result = ci.ResultFailed
	default:
		s.Result, s.Advice = ci.ResultError, err.Error()
	}
	return s
}

// reportPush prints refretry's own line about a final failure, after git's output.
func reportPush(w io.Writer, git string, err error) {
	var se *push.StartError
	var pe *push.Error
	var l *push.LockedError
	var re *push.RebaseError
	switch {
	case errors.As(err, &se):
		fmt.Fprintf(w, "refretry: cannot run git (%s): %v\n", git, se.Err)
	case reportLoopEnd(w, err, pushCause): // updateref_cmd.go
	case errors.As(err, &re):
		fmt.Fprintf(w, "refretry: %v\n", re)
	case errors.As(err, &pe) && pe.Class == push.ClassStaleLock && errors.As(err, &l):
		fmt.Fprintf(w, "refretry: the remote's lock %s was held by process %d, which is gone; "+
			"it must be removed on the server, so refretry did not retry\n", l.Lock, l.PID)
	case errors.As(err, &pe):
		// git's message says it all.
	default:
		fmt.Fprintf(w, "refretry: %v\n", err)
	}
}

// pushCause is a one-line reason for an attempt's failure.
func pushCause(err error) string {
	var pe *push.Error
	if !errors.As(err, &pe) {
		return err.Error()
	}
	var l *push.LockedError
	if pe.Class == push.ClassLockContention && errors.As(err, &l) {
		if l.Lock != "" {
			return fmt.Sprintf("%s on the remote's %s: %s", pe.Class, l.Lock, pe.Message)
		}
		return fmt.Sprintf("%s on the remote's references: %s", pe.Class, pe.Message)
	}
	return fmt.Sprintf("%s: %s", pe.Class, pe.Message)
}
