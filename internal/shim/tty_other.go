//go:build unix && !(darwin || dragonfly || freebsd || netbsd || openbsd)

package shim

import "golang.org/x/sys/unix"

// ioctlReadTermios is the request that reads a terminal's settings (isTerminal).
const ioctlReadTermios = unix.TCGETS
