// Command refretry is a drop-in replacement for `git update-ref` that retries lock
// contention, and nothing else, with jittered exponential backoff.
package main

import (
	"context"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
)

func main() {
	ctx, cancel := context.WithCancel(context.Background())
	var caught atomic.Int32
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		s := <-sigs
		caught.Store(int32(s.(syscall.Signal)))
		cancel() // git gets SIGTERM and removes its locks; no further attempt starts
	}()

	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Environ())
	if n := caught.Load(); n != 0 {
		code = 128 + int(n) // as a shell reports a death by signal
	}
	os.Exit(code)
}
