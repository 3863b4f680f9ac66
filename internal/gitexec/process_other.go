//go:build !linux

package gitexec

import (
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

func pipe() (r, w *os.File, err error) { return os.Pipe() }

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
