//go:build linux

package gitexec

import (
	"context"
	"errors"
	"io"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// start forks and execs directly: os.StartProcess would first probe, with a process
// of its own, whether process descriptors work.
func start(path string, argv, env []string, files [3]*os.File, newGroup bool) (*Process, error) {
	fds := [3]int{-1, -1, -1}
	for i, f := range files {
		if f != nil {
			fds[i] = int(f.Fd())
		}
	}
	return startFDs(path, argv, env, fds, newGroup)
}

// startFDs is start with descriptors; -1 means /dev/null.
func startFDs(path string, argv, env []string, files [3]int, newGroup bool) (*Process, error) {
	var fds [3]uintptr
	for i, fd := range files {
		if fd < 0 {
			null, err := unix.Open(os.DevNull, unix.O_RDWR|unix.O_CLOEXEC, 0)
			if err != nil {
				return nil, err
			}
			defer unix.Close(null)
			fd = null
		}
		fds[i] = uintptr(fd)
	}
	pid, err := syscall.ForkExec(path, argv, &syscall.ProcAttr{
		Env:   env,
		Files: fds[:],
		Sys:   &syscall.SysProcAttr{Setpgid: newGroup},
	})
	if err != nil {
		return nil, err
	}
	p := &Process{pid: pid, send: func(sig syscall.Signal) { syscall.Kill(pid, sig) }}
	p.wait = func() (syscall.WaitStatus, error) {
		// Learn that git ended without reaping it, so that a concurrent signal never
		// reaches a process that reused the pid; then reap it.
		var info unix.Siginfo
		for {
			err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
			if !errors.Is(err, unix.EINTR) {
				break
			}
		}
		p.markReaped()
		var ws syscall.WaitStatus
		for {
			_, err := syscall.Wait4(pid, &ws, 0, nil)
			if errors.Is(err, syscall.EINTR) {
				continue
			}
			return ws, os.NewSyscallError("wait4", err)
		}
	}
	return p, nil
}

// run is Run: both pipes are plain descriptors (no *os.File, no runtime poller),
// read with poll(2) in this goroutine.
func run(ctx context.Context, path string, argv, env []string, stdin *os.File, newGroup bool, out, errOut io.Writer) (int, error) {
	var po, pe [2]int
	if err := unix.Pipe2(po[:], unix.O_CLOEXEC); err != nil {
		return 0, os.NewSyscallError("pipe2", err)
	}
	if err := unix.Pipe2(pe[:], unix.O_CLOEXEC); err != nil {
		unix.Close(po[0])
		unix.Close(po[1])
		return 0, os.NewSyscallError("pipe2", err)
	}
	in := -1
	if stdin != nil {
		in = int(stdin.Fd())
	}
	p, err := startFDs(path, argv, env, [3]int{in, po[1], pe[1]}, newGroup)
	unix.Close(po[1])
	unix.Close(pe[1])
	if err != nil {
		unix.Close(po[0])
		unix.Close(pe[0])
		return 0, &StartError{Err: &os.PathError{Op: "fork/exec", Path: path, Err: err}}
	}
	p.watch(ctx)
	copyErr := drain(p, po[0], pe[0], out, errOut)
	code, err := p.Wait()
	if err == nil {
		err = copyErr
	}
	return code, err
}

// drain copies both pipes to their writers in this goroutine, with poll(2), until
// both end; once git has ended (its process descriptor says so) it waits at most
// WaitDelay more for that.
func drain(p *Process, outR, errR int, out, errOut io.Writer) error {
	defer unix.Close(outR)
	defer unix.Close(errR)
	fds := []unix.PollFd{
		{Fd: int32(outR), Events: unix.POLLIN},
		{Fd: int32(errR), Events: unix.POLLIN},
		{Fd: -1, Events: unix.POLLIN},
	}
	if h, err := unix.PidfdOpen(p.pid, 0); err == nil {
		defer unix.Close(h)
		fds[2].Fd = int32(h)
	}
	writers := [2]io.Writer{out, errOut}
	var firstErr error
	var deadline time.Time
	buf := make([]byte, 32<<10)
	for open := 2; open > 0; {
		timeout := -1
		if !deadline.IsZero() {
			timeout = int(time.Until(deadline) / time.Millisecond)
			if timeout <= 0 {
				break
			}
		}
		if _, err := unix.Poll(fds, timeout); err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return os.NewSyscallError("poll", err)
		}
		for i := range 2 {
			if fds[i].Fd < 0 || fds[i].Revents == 0 {
				continue
			}
			n, err := unix.Read(int(fds[i].Fd), buf)
			if n > 0 {
				if _, werr := writers[i].Write(buf[:n]); werr != nil && firstErr == nil {
					firstErr = werr
				}
			}
			if n <= 0 && !errors.Is(err, unix.EINTR) && !errors.Is(err, unix.EAGAIN) {
				fds[i].Fd = -1 // the end of the pipe (or an error on it)
				open--
			}
		}
		if fds[2].Fd >= 0 && fds[2].Revents != 0 {
			fds[2].Fd = -1
			deadline = time.Now().Add(WaitDelay)
		}
	}
	return firstErr
}
