//go:build windows

package platform

import (
	"os"
	"os/exec"

	"golang.org/x/sys/windows"
)

// Lock is not available: see the package documentation.
func Lock(f *os.File, wait bool) error { return ErrUnsupported }

// Unlock is not available: see the package documentation.
func Unlock(f *os.File) error { return ErrUnsupported }

// ProcessGone reports whether the process cannot be found. Windows opens the process to
// answer; a process that exists but may not be opened counts as present.
func ProcessGone(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return true
	}
	p.Release()
	return false
}

// NewProcessGroup does nothing on Windows: console signals are not delivered to a
// child by group in the same way, and refretry does not rely on it there.
func NewProcessGroup(cmd *exec.Cmd) {}

// IsTerminal reports whether f is a console.
func IsTerminal(f *os.File) bool {
	var mode uint32
	return windows.GetConsoleMode(windows.Handle(f.Fd()), &mode) == nil
}
