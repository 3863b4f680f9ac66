package platform

import (
	"syscall"
	"testing"
)

// TestUmask reads the umask this process has. Not parallel: it sets the umask, which
// is the whole process's.
func TestUmask(t *testing.T) {
	old := syscall.Umask(0o027)
	defer syscall.Umask(old)
	if got := Umask(); got != "0027" {
		t.Fatalf("Umask() = %q with umask 027", got)
	}
}
