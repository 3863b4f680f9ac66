//go:build windows

package shim

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
)

// gitNames are the file names a git executable has in a PATH directory.
var gitNames = []string{"git.exe"}

// EntryName is the shim's file name in its directory.
const EntryName = "git.exe"

// executable reports whether p is a regular file (Windows has no execute bit).
func executable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}

// Exec runs git at path with args and env as a child with this process's standard
// streams and returns its exit code: Windows cannot replace a running process with
// another. Ctrl-C reaches git through the shared console; the shim ignores it and
// waits for git to finish.
func Exec(path string, args, env []string) (int, error) {
	signal.Ignore(os.Interrupt)
	cmd := exec.Command(path, args...)
	cmd.Env = env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, nil
	case errors.As(err, &ee):
		return ee.ExitCode(), nil
	}
	return 127, fmt.Errorf("cannot run git (%s): %w", path, err)
}

// link copies target to entry: symbolic links need a privilege most Windows accounts
// lack.
func link(target, entry string) error { return copyFile(target, entry) }
