package cli

import (
	"context"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
)

// Signals is how refretry reacts to SIGINT and SIGTERM: its context is cancelled,
// git gets SIGTERM and removes its locks, no further attempt starts, and refretry
// exits 128 + the signal. Catching them costs a thread and a goroutine, which an
// update that needs one git does not pay: update-ref (and the shim's update-ref and
// the calls it hands to git) starts catching only when it is about to wait for more
// than one git (see Arm). Every other command starts as soon as its word is read
// (Run, RunAsGit), before it starts a process, reads a setting or looks at anything.
// Until then the signals' default action ends refretry: before a command's word is
// read that is Go's start and the reading of the command line, with nothing started;
// in update-ref's single first attempt, the git already running finishes on its own.
type Signals struct {
	once   sync.Once
	cancel context.CancelFunc
	caught atomic.Int32
}

// Context is the context every command runs in: Arm's signals cancel it.
func (s *Signals) Context() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	return ctx
}

// Caught is the signal that stopped the command, 0 if none.
func (s *Signals) Caught() int { return int(s.caught.Load()) }

// Arm starts catching SIGINT and SIGTERM, once: Main passes it on to the command,
// which calls it when it may wait.
func (s *Signals) Arm() {
	s.once.Do(func() {
		c := make(chan os.Signal, 1)
		signal.Notify(c, syscall.SIGINT, syscall.SIGTERM)
		go func() {
			sig := <-c
			s.caught.Store(int32(sig.(syscall.Signal)))
			s.cancel()
		}()
	})
}

// catchSignals calls arm, if there is one (tests have none).
func catchSignals(arm func()) {
	if arm != nil {
		arm()
	}
}
