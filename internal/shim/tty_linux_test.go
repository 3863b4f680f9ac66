package shim

import (
	"fmt"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// TestShimIsTerminal: a pseudo-terminal is a terminal; /dev/null (a character device)
// and a pipe are not, as isatty(3) says.
func TestShimIsTerminal(t *testing.T) {
	t.Parallel()
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if isTerminal(null) || isTerminal(w) {
		t.Errorf("isTerminal: /dev/null %v, a pipe %v", isTerminal(null), isTerminal(w))
	}
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal to check the positive case: %v", err)
	}
	defer ptmx.Close()
	n, err := unix.IoctlGetInt(int(ptmx.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.IoctlSetPointerInt(int(ptmx.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	pts, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal to check the positive case: %v", err)
	}
	defer pts.Close()
	if !isTerminal(pts) {
		t.Errorf("isTerminal(%s) = false", pts.Name())
	}
}
