package gitexec

import (
	"context"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/refretry/refretry/failure"
)

// Process is a git started by [Start]: the cheap way to run one, for the paths where
// refretry's own cost is measured against git's (a single update). It passes files
// to git as they are (no pipes, no copying goroutines) and, on Linux, skips the
// process-descriptor probe os/exec makes before its first start.
type Process struct {
	pid  int
	wait func() (syscall.WaitStatus, error)
	send func(syscall.Signal)

	mu     sync.Mutex
	reaped bool
	kill   *time.Timer
}

// Spec is a git to start.
type Spec struct {
	Git  string   // a path, or a name looked up in PATH
	Dirs []string // -C directories
	Env  []string // the caller's environment; Env(…) is applied
	Args []string // git's arguments after the -C options
	// Stdin, Stdout and Stderr are given to git as its descriptors 0, 1 and 2.
	Stdin, Stdout, Stderr *os.File
	// NewGroup starts git in a process group of its own.
	NewGroup bool
}

// StartError is why git could not be started: the executable is missing or not
// executable, or the system refused a new process. It matches (errors.Is)
// failure.ErrGitNotFound.
type StartError struct{ Err error }

func (e *StartError) Error() string        { return "git could not be started: " + e.Err.Error() }
func (e *StartError) Unwrap() error        { return e.Err }
func (e *StartError) Is(target error) bool { return target == failure.ErrGitNotFound }

// Start starts git. Cancelling ctx sends git SIGTERM (it removes its lock files),
// and SIGKILL if it is still running WaitDelay later. A failure to start is returned
// as it is: the executable is missing or not executable, or the system refused.
func Start(ctx context.Context, s Spec) (*Process, error) {
	path, argv, err := command(s)
	if err != nil {
		return nil, err
	}
	p, err := start(path, argv, Env(s.Env), [3]*os.File{s.Stdin, s.Stdout, s.Stderr}, s.NewGroup)
	if err != nil {
		return nil, &StartError{Err: &os.PathError{Op: "fork/exec", Path: path, Err: err}}
	}
	p.watch(ctx)
	return p, nil
}

// command resolves the Spec's git and builds its argument list.
func command(s Spec) (path string, argv []string, err error) {
	path = s.Git
	if !strings.ContainsRune(path, os.PathSeparator) {
		if path, err = exec.LookPath(path); err != nil {
			return "", nil, &StartError{Err: err}
		}
	}
	argv = make([]string, 0, 1+2*len(s.Dirs)+len(s.Args))
	argv = append(argv, s.Git)
	for _, d := range s.Dirs {
		argv = append(argv, "-C", d)
	}
	return path, append(argv, s.Args...), nil
}

// watch makes cancelling ctx terminate git (see Start).
func (p *Process) watch(ctx context.Context) {
	if ctx.Done() == nil {
		return
	}
	stop := context.AfterFunc(ctx, func() { p.terminate() })
	wait := p.wait
	p.wait = func() (syscall.WaitStatus, error) {
		defer stop()
		return wait()
	}
}

// Pid is git's process id.
func (p *Process) Pid() int { return p.pid }

// Wait waits for git to end and returns the status a shell would report: its exit
// code, or 128+n for death by signal n.
func (p *Process) Wait() (int, error) {
	ws, err := p.wait()
	p.mu.Lock()
	if p.kill != nil {
		p.kill.Stop()
	}
	p.mu.Unlock()
	if err != nil {
		return 0, err
	}
	if ws.Signaled() {
		return 128 + int(ws.Signal()), nil
	}
	return ws.ExitStatus(), nil
}

// terminate sends SIGTERM, then SIGKILL after WaitDelay, unless git has been reaped.
func (p *Process) terminate() {
	p.signal(syscall.SIGTERM)
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.reaped && p.kill == nil {
		p.kill = time.AfterFunc(WaitDelay, func() { p.signal(syscall.SIGKILL) })
	}
}

// signal signals git unless it has been reaped (its pid may then be another's).
func (p *Process) signal(sig syscall.Signal) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.reaped {
		p.send(sig)
	}
}

// markReaped records that the pid no longer names git; the waiting side calls it
// between learning that git ended and reaping it.
func (p *Process) markReaped() {
	p.mu.Lock()
	p.reaped = true
	p.mu.Unlock()
}

// Run runs git with the Spec's Stdin and its stdout and stderr copied to out and
// errOut (through pipes, which a file-size limit cannot cut short), and returns its
// exit status as Wait does. Once git has ended, whatever still holds its pipes (a
// process a hook left behind) is given WaitDelay to close them.
func Run(ctx context.Context, s Spec, out, errOut io.Writer) (int, error) {
	path, argv, err := command(s)
	if err != nil {
		return 0, err
	}
	return run(ctx, path, argv, Env(s.Env), s.Stdin, s.NewGroup, out, errOut)
}
