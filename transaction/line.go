package transaction

import (
	"context"
	"errors"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/refretry/refretry/internal/platform"
)

// waitInLine queues this process behind other refretry processes on the same host
// that are retrying on the same lock, and returns a function that leaves the line.
//
// Without it, every writer that lost the race polls the lock from its own git, and
// git's polling sleeps ever longer (up to a second) while the lock may already be
// free: at hundreds of writers the lock sits idle much of the time and each failed
// poll costs a process start. In line, a waiting writer sleeps in the kernel until the
// one ahead of it is done, then starts its git at once.
//
// The line is an flock(2) on dir, the directory holding the contended lock: the OS
// drops it when its holder exits however it ends, so it can never go stale, and it
// changes nothing in the repository. It only orders refretry's own retries; git's lock
// still decides who writes. patience, asked only when the line is not empty, says how
// much longer a caller that has waited so long may wait (it is asked again when that
// runs out; 0: no longer): after that, or when ctx is done, the caller goes ahead
// without the line, exactly as it would have without it. queued reports whether
// anyone was ahead.
// onWait is called before the wait, only when there is one.
//
// Anyone who can open dir can take its flock, another user too: a line whose holder
// is not of this user (heldByOther says so: platform.LockHeldByOtherUser, or a
// test's count of its calls) is no line of this user's processes, and the
// caller goes ahead, as without it. Who holds the line is looked up only while dir
// is quiet (dirChange): each look reads /proc/locks, whose size grows with the
// number of waiters, so every waiter looking every second cost a storm of 600 writers
// seconds of CPU. A line whose writes land changes dir all the time; a line another
// user holds leaves it still. A look is due when the line is found taken in a dir
// quiet for lineCheck, at a lineCheck tick after which dir did not change, and at
// least every lineLook whatever dir does; so a process of another user that takes
// the line delays an attempt by about lineCheck while nothing else is written there
// (docs/security.md).
func waitInLine(ctx context.Context, dir string, patience func(waited time.Duration) time.Duration, onWait func(), heldByOther func(*os.File) bool) (leave func(), queued bool) {
	nop := func() {}
	f, err := openDir(dir)
	if err != nil {
		return nop, false
	}
	if err := platform.Lock(f, false); err == nil {
		return func() { f.Close() }, false
	} else if !errors.Is(err, platform.ErrBusy) {
		f.Close() // no line here (or on this system): go ahead as without one
		return nop, false
	}
	changed, quiet := dirChange(f)
	looked := time.Now()
	if quiet && heldByOther(f) {
		f.Close()
		return nop, true
	}
	onWait()
	w := startLineWait(f)
	started := time.Now()
	t := time.NewTimer(patience(0))
	defer t.Stop()
	check := time.NewTicker(lineCheck)
	defer check.Stop()
	for {
		select {
		case err := <-w.done:
			if err != nil {
				return nop, true
			}
			return func() { f.Close() }, true
		case <-ctx.Done():
		case <-check.C:
			c, _ := dirChange(f)
			still := c.Equal(changed)
			changed = c
			if !still && time.Since(looked) < lineLook {
				continue
			}
			looked = time.Now()
			if !heldByOther(f) {
				continue
			}
		case <-t.C:
			if rest := patience(time.Since(started)); rest > 0 {
				t.Reset(rest)
				continue
			}
		}
		break
	}
	if !w.abandon() { // it came just now
		return func() { f.Close() }, true
	}
	return nop, true
}

// lineCheck is how often a wait in line looks at whether dir changed, and so
// whether to look at who holds the line; lineLook is the longest it goes without
// looking at who holds it.
const (
	lineCheck = time.Second
	lineLook  = 10 * time.Second
)

// dirChange is when dir (open as f) last changed, and whether that was lineCheck ago
// or longer (also when it cannot be told: then a look is never skipped for it).
func dirChange(f *os.File) (changed time.Time, quiet bool) {
	fi, err := f.Stat()
	if err != nil {
		return time.Time{}, true
	}
	return fi.ModTime(), time.Since(fi.ModTime()) >= lineCheck
}

// openDir opens dir for its lock. (Not with os.Open, which would also set up the
// runtime's poller for it, a cost the common path does not need.)
func openDir(dir string) (*os.File, error) {
	fd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	return os.NewFile(uintptr(fd), dir), nil
}

// lineWait is a blocking wait for the line on f, in a goroutine of its own, that can
// be given up. done receives the lock's result; a failed wait, or one that succeeds
// after abandon, closes f, and closing the only descriptor leaves the line.
type lineWait struct {
	f         *os.File
	mu        sync.Mutex
	abandoned bool
	done      chan error
}

func startLineWait(f *os.File) *lineWait {
	w := &lineWait{f: f, done: make(chan error, 1)}
	go func() {
		err := platform.Lock(f, true)
		w.mu.Lock()
		defer w.mu.Unlock()
		if err != nil || w.abandoned {
			f.Close()
		}
		if !w.abandoned {
			w.done <- err
		}
	}()
	return w
}

// abandon stops waiting. It reports false when the line was acquired meanwhile: the
// caller then holds it (and must close f).
func (w *lineWait) abandon() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	select {
	case err := <-w.done:
		return err != nil
	default:
	}
	w.abandoned = true
	return true
}
