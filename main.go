// Command refretry is a drop-in replacement for `git update-ref` that retries lock
// contention, and nothing else, with jittered exponential backoff.
package main

import (
	"context"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"

	"github.com/refretry/refretry/internal/shim"
)

func main() {
	var caught atomic.Int32
	// withSignals is the context every command runs in: cancelled by SIGINT or SIGTERM.
	// The shim asks for it only for update-ref, so a call it hands to git costs nothing
	// more than deciding.
	withSignals := func() context.Context {
		ctx, cancel := context.WithCancel(context.Background())
		sigs := make(chan os.Signal, 1)
		signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
		go func() {
			s := <-sigs
			caught.Store(int32(s.(syscall.Signal)))
			cancel() // git gets SIGTERM and removes its locks; no further attempt starts
		}()
		return ctx
	}

	var code int
	if shim.Invoked(os.Args[0]) { // started as git: the shim (shim_cmd.go)
		self, _ := os.Executable()
		code = runAsGit(withSignals, os.Args[1:], Streams{os.Stdin, os.Stdout, os.Stderr}, os.Environ(), self, shim.Exec)
	} else {
		code = run(withSignals(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Environ())
	}
	if n := caught.Load(); n != 0 {
		code = 128 + int(n) // as a shell reports a death by signal
	}
	os.Exit(code)
}
