package transaction

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/refretry/refretry/internal/platform"
)

func nop() {}

// TestLineOrder: the second process in line waits until the first leaves, then goes.
func TestLineOrder(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx := context.Background()
	forever := func(time.Duration) time.Duration { return time.Hour }

	leave1, queued := waitInLine(ctx, dir, forever, nop, platform.LockHeldByOtherUser)
	if queued {
		t.Fatal("first in an empty line reported queueing")
	}
	got := make(chan bool)
	go func() {
		leave2, queued := waitInLine(ctx, dir, forever, nop, platform.LockHeldByOtherUser)
		defer leave2()
		got <- queued
	}()
	select {
	case <-got:
		t.Fatal("second in line went ahead while the first was still there")
	case <-time.After(200 * time.Millisecond):
	}
	leave1()
	if q := <-got; !q {
		t.Error("second in line did not report that it queued")
	}
}

// TestLinePatience: a process whose patience runs out goes ahead without the line and
// does not take it later (the line stays usable for the others).
func TestLinePatience(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx := context.Background()
	leave1, _ := waitInLine(ctx, dir, nil, nop, platform.LockHeldByOtherUser)
	leave2, queued := waitInLine(ctx, dir, func(w time.Duration) time.Duration { return max(50*time.Millisecond-w, 0) }, nop, platform.LockHeldByOtherUser)
	if !queued {
		t.Fatal("an occupied line was not noticed")
	}
	leave2() // a no-op: it never got the line
	leave1()
	// The abandoned wait must have let go: a third process gets the line at once.
	deadline := time.Now().Add(10 * time.Second)
	for {
		leave3, queued := waitInLine(ctx, dir, func(time.Duration) time.Duration { return 0 }, nop, platform.LockHeldByOtherUser)
		leave3()
		if !queued {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the line stayed taken after everyone left")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestLineCanceled: cancelling the context ends the wait; the canceled process
// reports that it queued, was told before it waited, and does not hold the line.
func TestLineCanceled(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	leave1, _ := waitInLine(context.Background(), dir, nil, nop, platform.LockHeldByOtherUser)
	ctx, cancel := context.WithCancel(context.Background())
	waiting := make(chan struct{})
	type result struct {
		queued bool
		leave  func()
	}
	done := make(chan result)
	go func() {
		leave, queued := waitInLine(ctx, dir, func(time.Duration) time.Duration { return time.Hour }, func() { close(waiting) }, platform.LockHeldByOtherUser)
		done <- result{queued, leave}
	}()
	<-waiting
	cancel()
	var res result
	select {
	case res = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("cancelling the context did not end the wait")
	}
	if !res.queued {
		t.Error("a wait behind a holder did not report queueing")
	}
	res.leave()
	leave1()
	// The canceled waiter must not take the line later: a probe gets it at once.
	deadline := time.Now().Add(10 * time.Second)
	for {
		leave3, queued := waitInLine(context.Background(), dir, func(time.Duration) time.Duration { return 0 }, nop, platform.LockHeldByOtherUser)
		leave3()
		if !queued {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the canceled waiter took the line after all")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestLineReleasedOnDeath: the line belongs to a process; when it dies, even by
// SIGKILL, the next one goes. Nothing is left to clean up.
func TestLineReleasedOnDeath(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// busy probes the line without queueing (a queued probe that gives up would still
	// take the line for a moment later, when its flock returns).
	busy := func() bool {
		f, err := os.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		return errors.Is(platform.Lock(f, false), platform.ErrBusy)
	}
	// flock(1) from util-linux holds the line as another process would.
	holder := exec.Command("flock", "-o", dir, "sleep", "60")
	holder.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := holder.Start(); err != nil {
		t.Skipf("flock(1) unavailable: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !busy() { // wait until the holder has it
		if time.Now().After(deadline) {
			t.Fatal("flock(1) never took the line")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The holder dies once this process has queued behind it.
	killHolder := func() { _ = syscall.Kill(-holder.Process.Pid, syscall.SIGKILL) }
	leave, queued := waitInLine(context.Background(), dir, func(w time.Duration) time.Duration { return max(20*time.Second-w, 0) }, killHolder, platform.LockHeldByOtherUser)
	if !queued {
		t.Error("the wait behind a live holder did not queue")
	}
	_ = holder.Wait()
	if !busy() {
		t.Error("after the holder died, this process should hold the line")
	}
	leave()
	if busy() {
		t.Error("the line is still taken after its holder was killed and the next one left")
	}
}

// TestLineForeignHolder: a line whose flock another user holds (flock(1) as uid
// 65534 on a 0755 directory) is not waited for: the caller goes ahead at once,
// without it, whatever its patience.
func TestLineForeignHolder(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: it holds the line as uid 65534")
	}
	t.Parallel()
	flock, err := exec.LookPath("flock")
	if err != nil {
		t.Skip("no flock(1)")
	}
	dir := t.TempDir()
	for _, d := range []string{dir, filepath.Dir(dir)} { // the other user must reach it
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	holder := exec.Command(flock, dir, "sleep", "300")
	holder.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { holder.Process.Kill(); holder.Wait() }()
	f, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for deadline := time.Now().Add(time.Minute); platform.Lock(f, false) == nil; {
		platform.Unlock(f) // taken before the holder: let it have it
		if time.Now().After(deadline) {
			t.Fatal("the other user's flock(1) never took the line")
		}
		time.Sleep(time.Millisecond)
	}
	got := make(chan bool, 1)
	go func() {
		leave, queued := waitInLine(context.Background(), dir, func(time.Duration) time.Duration { return time.Hour }, nop, platform.LockHeldByOtherUser)
		leave()
		got <- queued
	}()
	select {
	case queued := <-got:
		if !queued {
			t.Error("the line taken by another user was reported free")
		}
	case <-time.After(time.Minute):
		t.Fatal("waited in a line another user holds")
	}
	if err := platform.Lock(f, false); !errors.Is(err, platform.ErrBusy) {
		t.Errorf("the other user's lock: %v; want it still held (the caller went ahead without it)", err)
	}
}

// TestLineLooksWhenQuiet: a waiter looks up who holds the line (a read of
// /proc/locks on Linux) only while the line's directory is still, not every second
// while writes land in it: at 600 waiters those looks cost seconds of CPU. Not
// parallel: it times how often a waiter looks.
func TestLineLooksWhenQuiet(t *testing.T) {
	dir := t.TempDir()
	holder, err := openDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	if err := platform.Lock(holder, false); err != nil {
		t.Skipf("no flock line here: %v", err)
	}
	var mu sync.Mutex
	looks := 0
	looksAt := func(f *os.File) bool {
		if f.Name() == dir {
			mu.Lock()
			looks++
			mu.Unlock()
		}
		return false
	}
	wait := func(d time.Duration) int {
		mu.Lock()
		looks = 0
		mu.Unlock()
		leave, queued := waitInLine(context.Background(), dir, func(waited time.Duration) time.Duration { return d - waited }, nop, looksAt)
		leave()
		if !queued {
			t.Error("the line this test holds was reported free")
		}
		mu.Lock()
		defer mu.Unlock()
		return looks
	}

	// Writes landing: a file made and removed in dir every 10 ms.
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		p := filepath.Join(dir, "x.lock")
		for {
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
			os.WriteFile(p, nil, 0o644)
			os.Remove(p)
		}
	}()
	busy := wait(3500 * time.Millisecond)
	close(stop)
	<-done

	// Nothing written for an hour.
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(dir, old, old); err != nil {
		t.Fatal(err)
	}
	quiet := wait(2500 * time.Millisecond)
	t.Logf("looks at the holder: %d in 3.5 s of a busy directory, %d in 2.5 s of a still one", busy, quiet)
	if busy > 1 { // one, if the writer stalled a whole second on a loaded machine
		t.Errorf("%d looks at the holder while writes landed; want none", busy)
	}
	if quiet < 2 {
		t.Errorf("%d looks at the holder of a line in a still directory; want one at once and one a second", quiet)
	}
}
