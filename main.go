// Command refretry is a drop-in replacement for `git update-ref` that retries lock
// contention, and nothing else, with jittered exponential backoff.
//
// The settings below keep the runtime's work to what a process that lives for a few
// milliseconds needs (docs/benchmarks.md): no later resizing of GOMAXPROCS, no name
// set on every memory mapping (a system call each).
//
//go:debug updatemaxprocs=0
//go:debug decoratemappings=0
package main

import (
	"context"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/refretry/refretry/internal/shim"
)

func main() {
	sig := &signals{}
	ctx := sig.context()
	var code int
	if shim.Invoked(os.Args[0]) { // started as git: the shim (shim_cmd.go)
		self, _ := os.Executable()
		code = runAsGit(ctx, os.Args[1:], Streams{os.Stdin, os.Stdout, os.Stderr}, os.Environ(), self, shim.Exec)
	} else {
		code = run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Environ())
	}
	if n := sig.caught.Load(); n != 0 {
		code = 128 + int(n) // as a shell reports a death by signal
	}
	os.Exit(code)
}

// signals is how refretry reacts to SIGINT and SIGTERM: its context is cancelled,
// git gets SIGTERM and removes its locks, and no further attempt starts. Catching
// them costs a thread and a goroutine, so it starts only when a command is about to
// wait for more than one git ([arm]); until then the signals' default action ends
// refretry, and a git already running finishes its one attempt on its own.
type signals struct {
	once   sync.Once
	cancel context.CancelFunc
	caught atomic.Int32
}

type armKey struct{}

// context is the context every command runs in, with arm attached.
func (s *signals) context() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	return context.WithValue(ctx, armKey{}, s.arm)
}

func (s *signals) arm() {
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

// arm starts catching SIGINT and SIGTERM for ctx's command; a no-op for a context
// that did not come from main (tests).
func arm(ctx context.Context) {
	if f, ok := ctx.Value(armKey{}).(func()); ok {
		f()
	}
}

// armer is arm for ctx, as a callback.
func armer(ctx context.Context) func() { return func() { arm(ctx) } }
