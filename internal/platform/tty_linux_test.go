package platform_test

import (
	"os"
	"testing"

	"github.com/refretry/refretry/internal/harness/testutil"
	"github.com/refretry/refretry/internal/platform"
)

// TestIsTerminal: a pseudo-terminal is a terminal; /dev/null (a character device)
// and a pipe are not, as isatty(3) says.
func TestIsTerminal(t *testing.T) {
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
	if platform.IsTerminal(null) || platform.IsTerminal(w) {
		t.Errorf("IsTerminal: /dev/null %v, a pipe %v", platform.IsTerminal(null), platform.IsTerminal(w))
	}
	_, pts := testutil.OpenPTY(t)
	if !platform.IsTerminal(pts) {
		t.Errorf("IsTerminal(%s) = false", pts.Name())
	}
}
