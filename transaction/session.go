package transaction

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"

	"github.com/refretry/refretry/failure"
	"github.com/refretry/refretry/internal/engine"
	"github.com/refretry/refretry/internal/gitexec"
)

// session proxies `update-ref --stdin`. Every command read from the caller is appended
// to a log and passed to the running git at once, so git sees the stream as the caller
// sends it. A transaction is durable once git answers its commit or abort; the log
// keeps every command since the last durable point. When git fails with lock
// contention, a fresh git receives that part of the log again and the caller's stream
// continues into it: the caller sees each "<verb>: ok" line once, in order, and
// nothing from the failed attempt.
type session struct {
	r    *run
	args Args

	// wmu serialises what goes to git's stdin: appending to the log, writing to the
	// running git, and replaying the log to a new one. mu is never held while writing
	// to git, so that a git blocked on a full stdout pipe cannot deadlock with a
	// writer blocked on its stdin.
	wmu sync.Mutex
	log *spool
	eof bool // the caller's input has ended
	// file is the caller's input when it is a regular file, read by git itself
	// from fileStart on: nothing is copied, and a retry starts git at the offset
	// after the last transaction it answered (see replayFrom). nil for a pipe.
	file      *os.File
	fileStart int64
	inErr     error
	stdin     io.WriteCloser // the running git's stdin, nil between attempts

	mu        sync.Mutex
	base      int64   // log offset where the current segment starts
	bounds    []int64 // log offsets just past each sent commit/abort not yet answered
	delivered int     // stdout lines given to the caller in the current segment
	errOut    *spool  // stderr of the running git not yet given to the caller
	acks      int     // durable points reached
	outErr    error   // writing to the caller failed

	code      int    // the last attempt's exit code
	renewedAt int    // acks when the budget was last renewed
	tally     *tally // the updates of the input, when counted (under wmu)
}

func (r *run) session(ctx context.Context, args Args) (Result, error) {
	s := &session{r: r, args: args, log: newSpool(0, "")}
	defer s.log.Close()
	if r.CountRefs {
		s.tally = &tally{}
	}
	if f, start, ok := regularFile(r.stdin); ok {
		// All of the input is there already, and can be read again: git reads it
		// directly, as it would without refretry, and only a retry or a place in
		// the line makes the run wait.
		s.file, s.fileStart, s.eof = f, start, true
	} else {
		// The caller's input is read as fast as it comes, independently of git,
		// for as long as the caller takes.
		r.beforeWait()
		go s.readInput(ctx)
	}
	code, err := r.engine().Run(ctx, s)
	if s.file != nil && s.tally != nil {
		s.tallyFile()
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return s.tally.result(Result{ExitCode: code}), err
}

// Attempt runs one git: the current segment of the log again, then the rest of the
// caller's input. Lock contention after transactions were committed in this budget
// renews the budget (engine.Attempt.Renew): those need no retry.
func (s *session) Attempt(ctx context.Context, a *engine.Attempt) error {
	var err error
	s.code, err = s.attempt(ctx, a)
	var e *failure.Error
	if errors.As(err, &e) && e.Class == failure.LockContention {
		if acks := s.ackCount(); acks > s.renewedAt {
			s.renewedAt = acks
			a.Renew()
		}
	}
	return err
}

// Final gives the caller git's remaining stderr and picks the outcome.
func (s *session) Final(err error) (int, error) {
	s.wmu.Lock()
	inErr := s.inErr
	s.wmu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.errOut != nil {
		_, _ = s.errOut.WriteTo(s.r.stderr)
		s.errOut.Close()
	}
	switch {
	case err != nil:
		return s.code, err
	case inErr != nil:
		// git committed what it was given; the caller must know the input was cut.
		return 128, inErr
	case s.outErr != nil:
		return 128, fmt.Errorf("writing standard output: %w", s.outErr)
	}
	return s.code, nil
}

// tallyFile counts the updates of a regular file's input, which git read itself.
func (s *session) tallyFile() {
	rd := newReader(io.NewSectionReader(s.file, s.fileStart, 1<<62), s.args.NUL)
	var buf []byte
	for {
		cmd, _, err := rd.Next(buf[:0])
		buf = cmd
		if len(cmd) > 0 {
			s.tally.add(cmd, s.args.NUL)
		}
		if err != nil {
			return
		}
	}
}

func (s *session) ackCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.acks
}

// readInput copies the caller's commands into the log and to the running git. Commands
// are passed on in chunks rather than one write per command, but never held back:
// whatever has been read goes out before a read that could wait for the caller, and at
// every transaction-control command, so an interactive caller sees no delay.
//
// With one exception, which keeps a batch all-or-nothing even if refretry is killed
// (SIGKILL, which it cannot catch) while the caller is still writing: without `start`,
// git commits whatever it has read when its input ends, so the input it has must never
// end on a complete command until the caller's does. The last few bytes of the last
// command are held until more input comes: its final LF (git rejects a last line
// without one), or with -z its last field (git rejects a command cut before a field).
// git sees the held bytes as soon as the caller sends anything more, ends its input,
// or sends a control command; a caller that waits for an answer sends one of those.
func (s *session) readInput(ctx context.Context) {
	rd := newReader(s.r.stdin, s.args.NUL)
	pend := make([]byte, 0, inputChunk)
	send := 0 // how much of pend may go to git now; the rest is held back
	for {
		start := len(pend)
		var (
			ctl control
			err error
		)
		pend, ctl, err = rd.Next(pend)
		s.count(pend[start:])
		send = sendable(pend, start, send, ctl, err, s.args.NUL)
		if err == nil && ctl == notControl && len(pend) < inputChunk && rd.Buffered() > 0 {
			continue
		}
		var ended bool
		pend, ended = s.pass(pend, send, ctl, err)
		send = 0
		if ended || ctx.Err() != nil {
			return
		}
	}
}

// count adds cmd, a command just read, to the tally of the input, if it is counted.
func (s *session) count(cmd []byte) {
	if s.tally != nil && len(cmd) > 0 {
		s.wmu.Lock()
		s.tally.add(cmd, s.args.NUL)
		s.wmu.Unlock()
	}
}

// sendable is how much of pend may go to git once the command starting at start has
// been read (of kind ctl, with the reader's err), given that send bytes could before:
// everything at a control command or at the end of the input, and never less than
// leaves more than maxHeld held back.
func sendable(pend []byte, start, send int, ctl control, err error, nul bool) int {
	if err == nil && ctl == notControl {
		send = releasable(pend, start, send, nul)
	} else {
		send = len(pend)
	}
	if len(pend)-send > maxHeld {
		send = len(pend) // a run of one-field -z commands: give up holding
	}
	return send
}

// pass appends the first send bytes of pend to the log and writes them to the running
// git, and returns what is left of pend; when the reader's err ends the input, it
// closes git's stdin and reports ended.
func (s *session) pass(pend []byte, send int, ctl control, err error) (rest []byte, ended bool) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if send > 0 {
		if _, werr := s.log.Write(pend[:send]); werr != nil && s.inErr == nil {
			s.inErr = werr
		}
		if ctl == ctlCommit || ctl == ctlAbort {
			end := s.log.Len()
			s.mu.Lock()
			s.bounds = append(s.bounds, end)
			s.mu.Unlock()
		}
		if s.stdin != nil {
			_, _ = s.stdin.Write(pend[:send]) // a git that died is noticed when it exits
		}
		pend = pend[:copy(pend, pend[send:])]
	}
	if err == nil {
		return pend, false
	}
	if !errors.Is(err, io.EOF) && s.inErr == nil {
		s.inErr = fmt.Errorf("reading standard input: %w", err)
	}
	s.eof = true
	if s.stdin != nil {
		s.stdin.Close()
	}
	return pend, true
}

// releasable returns how much of pend may be passed to git once the command that
// starts at offset start has been read, given that the first send bytes could before:
// everything but its final LF, or with -z everything before its last field. A -z
// command of one field (an option) cannot be cut that way, so what was held before it
// stays held along with it.
func releasable(pend []byte, start, send int, nul bool) int {
	cmd := pend[start:]
	if !nul {
		if len(cmd) > 0 && cmd[len(cmd)-1] == '\n' {
			return len(pend) - 1
		}
		return len(pend)
	}
	body := cmd
	if len(body) > 0 && body[len(body)-1] == 0 {
		body = body[:len(body)-1]
	}
	if k := bytes.LastIndexByte(body, 0); k >= 0 {
		return start + k + 1
	}
	return send
}

// maxHeld bounds what readInput holds back.
const maxHeld = 1 << 20

// inputChunk is the most input readInput gathers before passing it on.
const inputChunk = 64 << 10

// attempt runs one git process: it replays the current segment of the log, then
// receives the rest of the caller's input until the caller's input ends.
func (s *session) attempt(ctx context.Context, a *engine.Attempt) (int, error) {
	// Only an attempt that has all of its input queues: one still waiting for the
	// caller must not keep others waiting.
	s.wmu.Lock()
	ready := s.eof
	s.wmu.Unlock()
	leave := s.r.enterLine(ctx, a, ready)
	defer leave()
	if s.file != nil {
		return s.attemptFile(ctx, a)
	}
	return s.attemptPipe(ctx, a)
}

// attemptPipe is attempt with the input read by readInput: git gets the log's current
// segment, then readInput's writes, through a pipe.
func (s *session) attemptPipe(ctx context.Context, a *engine.Attempt) (int, error) {
	cmd := s.r.retryCommand(ctx, s.args, a)
	stdin, stdout, stderr, err := pipes(cmd)
	if err != nil {
		return 128, err
	}
	skip := s.newSegmentOutput()
	if err := cmd.Start(); err != nil {
		return finish(cmd, err, nil)
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); s.relayStdout(stdout, skip) }()
	go func() { defer wg.Done(); s.collectStderr(stderr) }()
	s.replay(stdin)
	wg.Wait()
	runErr := cmd.Wait()
	s.wmu.Lock()
	s.stdin = nil
	s.wmu.Unlock()
	stdin.Close()
	return s.r.outcome(ctx, cmd, runErr, s.errTail())
}

// pipes connects cmd's standard streams to pipes.
func pipes(cmd *exec.Cmd) (stdin io.WriteCloser, stdout, stderr io.ReadCloser, err error) {
	if stdin, err = cmd.StdinPipe(); err != nil {
		return nil, nil, nil, err
	}
	if stdout, err = cmd.StdoutPipe(); err != nil {
		return nil, nil, nil, err
	}
	if stderr, err = cmd.StderrPipe(); err != nil {
		return nil, nil, nil, err
	}
	return stdin, stdout, stderr, nil
}

// newSegmentOutput starts collecting a new attempt's stderr, dropping the last one's,
// and returns how many of its stdout lines the caller has already been given.
func (s *session) newSegmentOutput() (skip int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.errOut != nil {
		s.errOut.Close()
	}
	s.errOut = newSpool(0, "")
	return s.delivered
}

// replay writes the log's current segment to a new git's stdin, then closes it when
// the caller's input has ended, or else makes it the stdin readInput writes to.
func (s *session) replay(stdin io.WriteCloser) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.mu.Lock()
	base := s.base
	s.mu.Unlock()
	_, _ = io.Copy(stdin, s.log.ReaderFrom(base))
	if s.eof {
		stdin.Close()
	} else {
		s.stdin = stdin
	}
}

// errTail is the end of the running git's stderr, for the classifier.
func (s *session) errTail() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.errOut.Tail(classifyTail)
}

// attemptFile is attempt with the input in a regular file: git reads it from where
// the last durable transaction ended, and is started directly (gitexec.Run), its
// output relayed as it comes.
func (s *session) attemptFile(ctx context.Context, a *engine.Attempt) (int, error) {
	if err := s.replayFrom(); err != nil {
		return 128, err
	}
	out := &lineRelay{s: s, skip: s.newSegmentOutput()}
	r := s.r
	code, err := gitexec.Run(ctx, gitexec.Spec{
		Git: r.GitPath(), Dirs: r.Dirs, Env: gitexec.WithLockWait(r.Env, r.window(a)),
		Args: append(append(append([]string{}, r.GlobalArgs...), "update-ref"), s.args.Raw...), Stdin: s.file,
	}, out, errCollector{s})
	out.flush()
	var se *gitexec.StartError
	switch {
	case errors.As(err, &se):
		return 128, startFailure(ctx, se.Err)
	case err != nil:
		return 128, err
	}
	return r.classified(ctx, code, s.errTail())
}

// regularFile reports whether r is a regular file, and its current offset.
func regularFile(r io.Reader) (*os.File, int64, bool) {
	f, ok := r.(*os.File)
	if !ok {
		return nil, 0, false
	}
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return nil, 0, false
	}
	off, err := f.Seek(0, io.SeekCurrent)
	if err != nil {
		return nil, 0, false
	}
	return f, off, true
}

// replayFrom positions the input file for the next attempt: after the last
// transaction git answered (commit or abort), which the earlier attempts made
// durable, or at the start.
func (s *session) replayFrom() error {
	s.mu.Lock()
	acks := s.acks
	s.mu.Unlock()
	off := s.fileStart
	if acks > 0 {
		rd := newReader(io.NewSectionReader(s.file, s.fileStart, 1<<62), s.args.NUL)
		var buf []byte
		for seen := 0; seen < acks; {
			cmd, ctl, err := rd.Next(buf[:0])
			buf = cmd
			off += int64(len(cmd))
			if err != nil {
				break
			}
			if ctl == ctlCommit || ctl == ctlAbort {
				seen++
			}
		}
	}
	_, err := s.file.Seek(off, io.SeekStart)
	return err
}

// relayStdout passes git's stdout lines to the caller, dropping the first skip lines
// (already delivered by an earlier attempt), and marks durable points.
func (s *session) relayStdout(out io.Reader, skip int) {
	br := bufio.NewReader(out)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			s.relayLine(line, &skip)
		}
		if err != nil {
			return
		}
	}
}

// relayLine passes one line of git's stdout to the caller unless it is one of the
// first *skip (already delivered), and marks durable points.
func (s *session) relayLine(line []byte, skip *int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if *skip > 0 {
		*skip--
		return
	}
	if _, werr := s.r.stdout.Write(line); werr != nil && s.outErr == nil {
		s.outErr = werr
	}
	s.delivered++
	if bytes.Equal(line, []byte("commit: ok\n")) || bytes.Equal(line, []byte("abort: ok\n")) {
		s.durable()
	}
}

// lineRelay is relayStdout as a writer, for gitexec.Run, which hands it git's
// stdout as it comes.
type lineRelay struct {
	s       *session
	skip    int
	partial []byte
}

func (w *lineRelay) Write(p []byte) (int, error) {
	w.partial = append(w.partial, p...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			return len(p), nil
		}
		w.s.relayLine(w.partial[:i+1], &w.skip)
		w.partial = w.partial[i+1:]
	}
}

// flush passes on a last line without a newline.
func (w *lineRelay) flush() {
	if len(w.partial) > 0 {
		w.s.relayLine(w.partial, &w.skip)
		w.partial = nil
	}
}

// errCollector is collectStderr as a writer, for gitexec.Run.
type errCollector struct{ s *session }

func (w errCollector) Write(p []byte) (int, error) {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	return w.s.errOut.Write(p)
}

// durable records that the oldest outstanding commit or abort was answered: the log
// before it will never be replayed, and git's stderr so far belongs to the caller.
// Called with s.mu held.
func (s *session) durable() {
	if len(s.bounds) > 0 {
		s.base, s.bounds = s.bounds[0], s.bounds[1:]
	}
	s.delivered = 0
	s.acks++
	_, _ = s.errOut.WriteTo(s.r.stderr)
	s.errOut.Close()
	s.errOut = newSpool(0, "")
}

func (s *session) collectStderr(errOut io.Reader) {
	buf := make([]byte, 32<<10)
	for {
		n, err := errOut.Read(buf)
		if n > 0 {
			s.mu.Lock()
			_, _ = s.errOut.Write(buf[:n])
			s.mu.Unlock()
		}
		if err != nil {
			return
		}
	}
}
