//go:build windows

package gitexec

import (
	"os"
	"syscall"
)

// setGroup does nothing on Windows: console signals are not sent by process group.
func setGroup(attr *os.ProcAttr, newGroup bool) {}

// sendSignal ends the process: Windows has no SIGTERM to send.
func sendSignal(p *os.Process, sig syscall.Signal) { p.Kill() }
