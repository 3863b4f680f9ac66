// Command refretry is a drop-in replacement for `git update-ref` that retries lock
// contention, and nothing else, with jittered exponential backoff; see README.md.
//
// The settings below keep the runtime's work to what a process that lives for a few
// milliseconds needs (docs/benchmarks.md): no later resizing of GOMAXPROCS, no name
// set on every memory mapping (a system call each).
//
//go:debug updatemaxprocs=0
//go:debug decoratemappings=0
package main

import (
	"os"

	"github.com/refretry/refretry/internal/cli"
)

func main() {
	var sig cli.Signals
	code := cli.Main(sig.Context(), sig.Arm, os.Args, cli.Streams{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}, os.Environ())
	if n := sig.Caught(); n != 0 {
		code = 128 + n // as a shell reports a death by signal
	}
	os.Exit(code)
}
