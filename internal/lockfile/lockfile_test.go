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

	"github.com/refretry/refretry/internal/harness/testutil"
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

// onHost is r giving the reasons of a refretry in the host's pid namespace, whatever
// namespace the test runs in, so that they can be compared whole.
func onHost(r Rule) Rule {
	r.ownPIDNamespace = func() bool { return false }
	return r
}

// inContainer is r giving the reasons of a refretry in a container's pid namespace.
func inContainer(r Rule) Rule {
	r.ownPIDNamespace = func() bool { return true }
	return r
}

// TestBreakLock: Break removes a lock only when it is stale under the rule: its holder
// pid is not running here and it is older than the pid grace, or it is older than the
// stale-after limit with no running holder on record. A lock whose ~pid.lock names a
// running process is never removed, however old; nor is a young one whose holder pid
// cannot be seen, as a live holder in another pid namespace looks the same.
func TestBreakLock(t *testing.T) {
	dead := deadPID(t)
	live := os.Getpid()
	unseen := fmt.Sprintf("its holder, process %d (from the ~pid.lock file), is not running here", dead)
	def := Rule{StaleAfter: 2 * time.Minute}
	cases := []struct {
		name       string
		rule       Rule
		age        time.Duration
		pid        int
		removed    bool
		wantReason string // the whole reason, or, for a NotStaleError, a part
	}{
		{"unseen holder, young", def, time.Second, dead, false,
			unseen + ", but the lock is younger than the pid grace of 2m0s, and a live holder in another pid namespace looks the same from here"},
		{"unseen holder, younger than a short grace", Rule{StaleAfter: time.Hour, PIDGrace: time.Minute}, 50 * time.Second, dead, false,
			"younger than the pid grace of 1m0s"},
		{"unseen holder, older than the grace (the stale-after limit)", def, 3 * time.Minute, dead, true,
			unseen + ", and the lock is older than the pid grace of 2m0s"},
		{"unseen holder, older than a short grace", Rule{StaleAfter: time.Hour, PIDGrace: time.Minute}, 2 * time.Minute, dead, true,
			unseen + ", and the lock is older than the pid grace of 1m0s"},
		{"unseen holder, grace without a stale-after limit", Rule{PIDGrace: time.Minute}, 2 * time.Minute, dead, true,
			unseen + ", and the lock is older than the pid grace of 1m0s"},
		{"unseen holder, older than stale-after below a longer grace", Rule{StaleAfter: 2 * time.Minute, PIDGrace: time.Hour}, 3 * time.Minute, dead, true,
			"it is older than the stale-after limit of 2m0s; " + unseen},
		{"unseen holder, no limit at all", Rule{}, time.Hour, dead, false,
			unseen + ", but with neither a stale-after limit nor a pid grace that never makes a lock stale"},
		{"no pid file, old", def, time.Hour, 0, true, "it is older than the stale-after limit of 2m0s"},
		{"no pid file, older than the grace only", Rule{StaleAfter: time.Hour, PIDGrace: time.Minute}, 2 * time.Minute, 0, false,
			"its holder is not known to be gone and it is younger than the stale-after limit"},
		{"live holder, young", def, time.Second, live, false, "which is running"},
		{"live holder, old", def, time.Hour, live, false, "which is running"},
		{"no pid file, young", def, time.Second, 0, false, "younger than the stale-after limit"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			lock, pidFile := testutil.AgedLock(t, dir, tc.age, tc.pid)
			b, err := Break(lock, onHost(tc.rule), time.Now())
			if tc.removed {
				if err != nil {
					t.Fatalf("Break: %v", err)
				}
				if testutil.Exists(lock) || testutil.Exists(pidFile) {
					t.Errorf("lock or pid file left: %v %v", testutil.Exists(lock), testutil.Exists(pidFile))
				}
				if b.Reason != tc.wantReason {
					t.Errorf("reason %q\nwant %q", b.Reason, tc.wantReason)
				}
				wantPIDFile := ""
				if tc.pid > 0 {
					wantPIDFile = pidFile
				}
				if b.PIDFile != wantPIDFile || b.Lock != lock || b.PID != tc.pid {
					t.Errorf("removed %q and %q (pid %d), want %q and %q (pid %d)", b.Lock, b.PIDFile, b.PID, lock, wantPIDFile, tc.pid)
				}
				return
			}
			var ns *NotStaleError
			if !errors.As(err, &ns) || !strings.Contains(ns.Reason, tc.wantReason) {
				t.Fatalf("Break: %v, want a NotStaleError saying %q", err, tc.wantReason)
			}
			if !testutil.Exists(lock) || tc.pid > 0 && !testutil.Exists(pidFile) {
				t.Errorf("a lock that is not provably stale was touched")
			}
		})
	}
}

// TestInspect: Inspect and Break apply one rule. Inspect also calls a lock stale by
// age when its ~pid.lock names a running process (refretry then stops instead of
// waiting for a holder stuck that long; Break still refuses to remove it), and says
// why a lock whose holder cannot be seen is still waited for.
func TestInspect(t *testing.T) {
	dead := deadPID(t)
	live := os.Getpid()
	def := Rule{StaleAfter: 2 * time.Minute}
	cases := []struct {
		name               string
		age                time.Duration
		pid                int
		stale, unseen, why bool
	}{
		{"unseen holder, young", time.Second, dead, false, true, true},
		{"unseen holder, old", time.Hour, dead, true, true, false},
		{"live holder, young", time.Second, live, false, false, false},
		{"live holder, old", time.Hour, live, true, false, false},
		{"no pid file, young", time.Second, 0, false, false, false},
		{"no pid file, old", time.Hour, 0, true, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			lock, _ := testutil.AgedLock(t, t.TempDir(), tc.age, tc.pid)
			f := Inspect(lock, def, time.Now())
			if !f.Present || f.PID != tc.pid || f.Stale != tc.stale || f.Unseen != tc.unseen ||
				(f.Reason != "") != tc.stale || (f.Wait != "") != tc.why {
				t.Errorf("Inspect: %+v; want stale %v, unseen %v, a wait reason %v", f, tc.stale, tc.unseen, tc.why)
			}
		})
	}
	if f := Inspect(filepath.Join(t.TempDir(), "x.lock"), def, time.Now()); f != (Facts{}) {
		t.Errorf("Inspect of no lock: %+v", f)
	}
}

// TestContainerNote: when refretry runs in a container's pid namespace, every reason
// that rests on an unseen holder says that holders elsewhere cannot be seen.
func TestContainerNote(t *testing.T) {
	const note = "; refretry runs in a container's pid namespace, where a holder in another container or on the host cannot be seen"
	dead := deadPID(t)
	def := inContainer(Rule{StaleAfter: 2 * time.Minute})
	young, _ := testutil.AgedLock(t, t.TempDir(), time.Second, dead)
	if f := Inspect(young, def, time.Now()); f.Stale || !strings.HasSuffix(f.Wait, note) {
		t.Errorf("young lock: %+v; want it waited for, with the note", f)
	}
	old, _ := testutil.AgedLock(t, t.TempDir(), time.Hour, dead)
	if f := Inspect(old, def, time.Now()); !f.Stale || !strings.HasSuffix(f.Reason, note) {
		t.Errorf("old lock: %+v; want it stale, with the note", f)
	}
	noPID, _ := testutil.AgedLock(t, t.TempDir(), time.Hour, 0)
	if f := Inspect(noPID, def, time.Now()); !f.Stale || strings.Contains(f.Reason, note) {
		t.Errorf("old lock without a pid: %+v; want it stale, without the note", f)
	}
}

// TestBreakLockReplaced: a lock that a new holder took between the inspection and the
// removal (a different inode under the same name) is left alone, as is its ~pid.lock.
func TestBreakLockReplaced(t *testing.T) {
	dir := t.TempDir()
	lock, pidFile := testutil.AgedLock(t, dir, time.Hour, deadPID(t))
	live := []byte(fmt.Sprintf("pid %d\n", os.Getpid()))
	v, err := Judge(lock, Rule{StaleAfter: 2 * time.Minute}, time.Now())
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
	_, err := Break(filepath.Join(t.TempDir(), "x.lock"), Rule{StaleAfter: time.Minute}, time.Now())
	if !errors.Is(err, ErrGone) {
		t.Fatalf("Break: %v, want ErrGone", err)
	}
}
