package platform

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
)

// TestOwnPIDNamespace: this test's process and the same test binary started in a new
// pid namespace (CLONE_NEWPID, which needs root) answer differently, and the child
// knows it is in one of its own.
func TestOwnPIDNamespace(t *testing.T) {
	if os.Getenv("REFRETRY_PIDNS_CHILD") == "1" {
		fmt.Printf("own=%v pid=%d\n", OwnPIDNamespace(), os.Getpid())
		return
	}
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		t.Skipf("no /proc/self/ns/pid: %v", err)
	}
	if got, want := OwnPIDNamespace(), ns != initPIDNamespace; got != want {
		t.Errorf("OwnPIDNamespace() = %v in %s", got, ns)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestOwnPIDNamespace$")
	cmd.Env = append(os.Environ(), "REFRETRY_PIDNS_CHILD=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID}
	out, err := cmd.Output()
	if errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EINVAL) {
		t.Skipf("cannot make a pid namespace here: %v", err)
	}
	if err != nil {
		t.Fatalf("child in a new pid namespace: %v\n%s", err, out)
	}
	if want := "own=true pid=1\n"; string(out[:min(len(out), len(want))]) != want {
		t.Errorf("child in a new pid namespace said %q, want it to start %q", out, want)
	}
}
