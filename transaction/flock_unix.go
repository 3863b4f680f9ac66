//go:build unix

package transaction

import (
	"errors"
	"os"
	"syscall"
)

// flock is flock(2) on f, retried when interrupted. New code should use
// internal/platform.Lock, which builds everywhere.
func flock(f *os.File, how int) error {
	for {
		err := syscall.Flock(int(f.Fd()), how)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}
