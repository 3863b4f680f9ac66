package lockfile

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// deadPID is the pid of a process that has exited and been reaped.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

// lockWithPID makes dir/x.lock, aged by age, and, when pid > 0, dir/x~pid.lock naming pid.
func lockWithPID(t *testing.T, dir string, age time.Duration, pid int) (lock, pidFile string) {
	t.Helper()
	lock, pidFile = filepath.Join(dir, "x.lock"), filepath.Join(dir, "x~pid.lock")
	if err := os.WriteFile(lock, []byte("held"), 0o644); err != nil {
		t.Fatal(err)
	}
	if pid > 0 {
		if err := os.WriteFile(pidFile, []byte(fmt.Sprintf("pid %d\n", pid)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	then := time.Now().Add(-age)
	for _, p := range []string{lock, pidFile} {
		os.Chtimes(p, then, then)
	}
	return lock, pidFile
}

func exists(p string) bool { _, err := os.Lstat(p); return err == nil }

// TestBreakLock: Break removes a lock only when its holder is proven dead or it is
// old with no live holder on record, and never a lock whose ~pid.lock names a running
// process, however old.
func TestBreakLock(t *testing.T) {
	dead := deadPID(t)
	live := os.Getpid()
	cases := []struct {
		name       string
		age        time.Duration
		pid        int
		removed    bool
		reasonPart string
	}{
		{"dead holder, young", time.Second, dead, true, fmt.Sprintf("process %d (from the ~pid.lock file), is no longer running", dead)},
		{"no pid file, old", time.Hour, 0, true, "older than the stale-after limit of 2m0s"},
		{"live holder, young", time.Second, live, false, "which is running"},
		{"live holder, old", time.Hour, live, false, "which is running"},
		{"no pid file, young", time.Second, 0, false, "younger than the stale-after limit"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			lock, pidFile := lockWithPID(t, dir, tc.age, tc.pid)
			b, err := Break(lock, 2*time.Minute, time.Now())
			if tc.removed {
				if err != nil {
					t.Fatalf("Break: %v", err)
				}
				if exists(lock) || exists(pidFile) {
					t.Errorf("lock or pid file left: %v %v", exists(lock), exists(pidFile))
				}
				if !strings.Contains(b.Reason, tc.reasonPart) {
					t.Errorf("reason %q, want it to contain %q", b.Reason, tc.reasonPart)
				}
				wantPIDFile := ""
				if tc.pid > 0 {
					wantPIDFile = pidFile
				}
				if b.PIDFile != wantPIDFile || b.Lock != lock {
					t.Errorf("removed %q and %q, want %q and %q", b.Lock, b.PIDFile, lock, wantPIDFile)
				}
				return
			}
			var ns *NotStaleError
			if !errors.As(err, &ns) || !strings.Contains(ns.Reason, tc.reasonPart) {
				t.Fatalf("Break: %v, want a NotStaleError saying %q", err, tc.reasonPart)
			}
			if !exists(lock) || tc.pid > 0 && !exists(pidFile) {
				t.Errorf("a lock that is not provably stale was touched")
			}
		})
	}
}

// TestBreakLockReplaced: a lock that a new holder took between the inspection and the
// removal (a different inode under the same name) is left alone, as is its ~pid.lock.
func TestBreakLockReplaced(t *testing.T) {
	dir := t.TempDir()
	lock, pidFile := lockWithPID(t, dir, time.Second, deadPID(t))
	live := []byte(fmt.Sprintf("pid %d\n", os.Getpid()))
	v, err := Judge(lock, 2*time.Minute, time.Now())
	if err != nil {
		t.Fatalf("Judge: %v", err)
	}
	// Between the judgement and the removal the dead holder's files go and a live
	// writer takes the lock.
	os.Remove(lock)
	os.Remove(pidFile)
	os.WriteFile(lock, []byte("new holder"), 0o644)
	os.WriteFile(pidFile, live, 0o644)
	_, err = v.Remove()
	if !errors.Is(err, ErrChanged) {
		t.Fatalf("Break: %v, want ErrChanged", err)
	}
	if b, _ := os.ReadFile(lock); string(b) != "new holder" {
		t.Errorf("the new holder's lock was touched: %q", b)
	}
	if b, _ := os.ReadFile(pidFile); !bytes.Equal(b, live) {
		t.Errorf("the new holder's pid file was touched: %q", b)
	}
}

// TestBreakLockGone: a lock that disappears is reported as gone, not as an error.
func TestBreakLockGone(t *testing.T) {
	_, err := Break(filepath.Join(t.TempDir(), "x.lock"), time.Minute, time.Now())
	if !errors.Is(err, ErrGone) {
		t.Fatalf("Break: %v, want ErrGone", err)
	}
}
