//go:build linux

package platform

import (
	"os"
	"testing"
)

// TestLockHeldByOtherUser: a lock this process holds is its user's; seen by a
// process of another uid (set here) it is another user's; no lock, nobody's.
func TestLockHeldByOtherUser(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	holder, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	waiter, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer waiter.Close()
	if lockHeldByOtherUser(waiter, ^os.Geteuid()) {
		t.Error("no lock held, yet another user's")
	}
	if err := Lock(holder, false); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat("/proc/locks"); err != nil {
		t.Skip("no /proc/locks")
	}
	if LockHeldByOtherUser(waiter) {
		t.Error("this process's lock is another user's")
	}
	if !lockHeldByOtherUser(waiter, ^os.Geteuid()) {
		t.Error("seen from another uid, this process's lock is not another user's")
	}
}
