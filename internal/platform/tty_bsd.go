//go:build darwin || dragonfly || freebsd || netbsd || openbsd

package platform

import "golang.org/x/sys/unix"

// ioctlReadTermios is the request that reads a terminal's settings (IsTerminal).
const ioctlReadTermios = unix.TIOCGETA
