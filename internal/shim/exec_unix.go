//go:build unix

package shim

import (
	"fmt"
	"os"
	"syscall"
)

// gitNames are the file names a git executable has in a PATH directory.
var gitNames = []string{"git"}

// EntryName is the shim's file name in its directory.
const EntryName = "git"

// executable reports whether p is a regular file with an execute bit.
func executable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// Exec replaces this process with git at path, run with args (git's arguments, without
// argv[0]) and env: the same process id and standard streams, so the caller sees git's
// exit code and signals reach git directly. It returns only if the exec failed; the
// code is then 127, as a shell reports a command it could not run.
func Exec(path string, args, env []string) (int, error) {
	argv := append([]string{path}, args...)
	err := syscall.Exec(path, argv, env)
	return 127, fmt.Errorf("cannot run git (%s): %w", path, err)
}

// link makes entry a symbolic link to target, or a copy of it where the file system
// has no symbolic links.
func link(target, entry string) error {
	if err := os.Symlink(target, entry); err != nil {
		return copyFile(target, entry)
	}
	return nil
}
