//go:build unix

package platform

import (
	"errors"
	"os"
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"
)

// Lock takes an exclusive flock(2) on f, waiting for it when wait is true. The lock
// belongs to the open file: closing f, or the process ending in any way, releases it.
func Lock(f *os.File, wait bool) error {
	how := syscall.LOCK_EX
	if !wait {
		how |= syscall.LOCK_NB
	}
	for {
		err := syscall.Flock(int(f.Fd()), how)
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EWOULDBLOCK):
			return ErrBusy
		}
		return err
	}
}

// Unlock releases a lock taken with [Lock].
func Unlock(f *os.File) error { return syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }

// ProcessGone reports whether no process with this pid exists on this host, in this
// pid namespace. A process that exists but belongs to another user is not gone.
func ProcessGone(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// NewProcessGroup makes cmd start in a process group of its own, so that a signal to
// the caller's group (a Ctrl-C at a terminal) does not reach it.
func NewProcessGroup(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
}

// IsTerminal reports whether f is a terminal, as isatty(3) does: it has terminal
// settings. Being a character device is not enough: /dev/null is one.
func IsTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), ioctlReadTermios)
	return err == nil
}
