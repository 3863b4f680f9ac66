//go:build unix && !linux

package gitea

import "syscall"

func dieWithParent(a *syscall.SysProcAttr) {}
