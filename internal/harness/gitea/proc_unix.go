//go:build unix

package gitea

import (
	"os/exec"
	"syscall"
)

// ownGroup starts cmd in a process group of its own, so that killGroup reaches what
// it leaves behind too, and, where the system can, has it terminated when this
// process dies without closing the instance (a test's timeout, a kill).
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	dieWithParent(cmd.SysProcAttr)
}

func terminate(cmd *exec.Cmd) { cmd.Process.Signal(syscall.SIGTERM) }

// killGroup kills cmd's process group (cmd itself may have ended already).
func killGroup(cmd *exec.Cmd) { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }

// groupAlive reports whether a process of group pgid is still there.
func groupAlive(pgid int) bool { return syscall.Kill(-pgid, 0) != syscall.ESRCH }
