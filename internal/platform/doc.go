// Package platform holds the few operating-system calls whose form differs between
// the systems refretry builds for, so that the rest of the code has one spelling.
//
// On Unix (Linux, macOS, the BSDs) every function does what it says. On Windows:
// [Lock] returns [ErrUnsupported] (refretry's line of waiting writers is a Unix
// optimisation; without it writers poll through git's own lock wait, as plain git
// does), [ProcessGone] asks the system whether the process can be opened, and
// [NewProcessGroup] does nothing; [IsTerminal] asks whether the file is a console.
// Only Linux has pid namespaces: elsewhere
// [OwnPIDNamespace] is false.
package platform

import "errors"

// ErrBusy is returned by a non-blocking [Lock] when another holds the lock.
var ErrBusy = errors.New("lock held by another process")

// ErrUnsupported is returned where the system offers no such call.
var ErrUnsupported = errors.New("not supported on this system")
