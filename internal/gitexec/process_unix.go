//go:build unix && !linux

package gitexec

import (
	"os"
	"syscall"
)

func setGroup(attr *os.ProcAttr, newGroup bool) {
	attr.Sys = &syscall.SysProcAttr{Setpgid: newGroup}
}

func sendSignal(p *os.Process, sig syscall.Signal) { p.Signal(sig) }
