//go:build !linux

package gitexec

import (
	"context"
	"errors"
	"io"
	"os"
	"syscall"
)

// start uses os.StartProcess: outside Linux it has no probe to skip.
func start(path string, argv, env []string, files [3]*os.File, newGroup bool) (*Process, error) {
	for i, f := range files {
		if f == nil {
			null, err := os.Open(os.DevNull)
			if err != nil {
				return nil, err
			}
			defer null.Close()
			files[i] = null
		}
	}
	attr := &os.ProcAttr{Env: env, Files: files[:]}
	setGroup(attr, newGroup)
	proc, err := os.StartProcess(path, argv, attr)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			return nil, pe.Err
		}
		return nil, err
	}
	p := &Process{pid: proc.Pid}
	p.wait = func() (syscall.WaitStatus, error) {
		ps, err := proc.Wait()
		p.markReaped()
		var ws syscall.WaitStatus
		if err != nil {
			return ws, err
		}
		ws, _ = ps.Sys().(syscall.WaitStatus)
		return ws, nil
	}
	p.send = func(sig syscall.Signal) { sendSignal(proc, sig) }
	return p, nil
}

// run is Run with os.Pipe and a goroutine for stdout.
func run(ctx context.Context, path string, argv, env []string, stdin *os.File, newGroup bool, out, errOut io.Writer) (int, error) {
	outR, outW, err := os.Pipe()
	if err != nil {
		return 0, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return 0, err
	}
	p, err := start(path, argv, env, [3]*os.File{stdin, outW, errW}, newGroup)
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		return 0, &StartError{Err: &os.PathError{Op: "fork/exec", Path: path, Err: err}}
	}
	p.watch(ctx)
	copyErr := drain(p, outR, errR, out, errOut)
	code, err := p.Wait()
	if err == nil {
		err = copyErr
	}
	return code, err
}

// drain copies both pipes to their writers until both end.
func drain(p *Process, outR, errR *os.File, out, errOut io.Writer) error {
	defer outR.Close()
	defer errR.Close()
	errc := make(chan error, 1)
	go func() {
		_, err := io.Copy(out, outR)
		errc <- err
	}()
	_, err := io.Copy(errOut, errR)
	if e := <-errc; err == nil {
		err = e
	}
	return err
}
