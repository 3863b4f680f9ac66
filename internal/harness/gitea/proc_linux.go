package gitea

import "syscall"

// dieWithParent has the child sent SIGTERM when the thread that started it ends,
// which for a Go program is when the process ends (no goroutine here locks its
// thread).
func dieWithParent(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGTERM }
