package platform

import (
	"errors"
	"os"
	"os/exec"
	"runtime"
	"testing"
)

func TestLock(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no locks on Windows (documented)")
	}
	dir := t.TempDir()
	a, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := Lock(a, false); err != nil {
		t.Fatalf("first lock: %v", err)
	}
	if err := Lock(b, false); !errors.Is(err, ErrBusy) {
		t.Fatalf("second lock while held: %v, want ErrBusy", err)
	}
	if err := Unlock(a); err != nil {
		t.Fatal(err)
	}
	if err := Lock(b, false); err != nil {
		t.Fatalf("lock after unlock: %v", err)
	}
}

func TestProcessGone(t *testing.T) {
	if ProcessGone(os.Getpid()) {
		t.Error("this process reported gone")
	}
	cmd := exec.Command("true")
	if runtime.GOOS == "windows" {
		cmd = exec.Command("cmd", "/c", "exit")
	}
	if err := cmd.Run(); err != nil {
		t.Skipf("cannot start a child: %v", err)
	}
	if !ProcessGone(cmd.Process.Pid) {
		t.Errorf("reaped child %d reported present", cmd.Process.Pid)
	}
}
