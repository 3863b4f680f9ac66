package shim

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// DefaultDir is the refretry-owned directory the shim is installed in when no other is
// given: $XDG_DATA_HOME/refretry/shim, else ~/.local/share/refretry/shim
// (%LOCALAPPDATA%\refretry\shim on Windows).
func DefaultDir(getenv func(string) string) (string, error) {
	if runtime.GOOS == "windows" {
		if d := getenv("LOCALAPPDATA"); d != "" {
			return filepath.Join(d, "refretry", "shim"), nil
		}
	}
	if d := getenv("XDG_DATA_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "refretry", "shim"), nil
	}
	home := getenv("HOME")
	if home == "" && runtime.GOOS == "windows" {
		home = getenv("USERPROFILE")
	}
	if home == "" {
		return "", errors.New("neither XDG_DATA_HOME nor HOME is set: give the directory with --dir")
	}
	return filepath.Join(home, ".local", "share", "refretry", "shim"), nil
}

// NotShimError is returned when the entry a shim would take is something else (a real
// git, say): Install and Uninstall leave it alone.
type NotShimError struct{ Path string }

func (e *NotShimError) Error() string {
	return fmt.Sprintf("%s exists and is not a refretry shim; remove it or choose another directory", e.Path)
}

// Install puts the shim entry into dir (made if missing) pointing at self, the
// refretry executable: a symbolic link on Unix, a copy on Windows. An entry that is
// already a refretry shim is replaced; anything else there is an error. It returns the
// entry's path.
func Install(dir, self string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	entry := filepath.Join(dir, EntryName)
	if _, err := os.Lstat(entry); err == nil {
		if !isShim(entry, self) {
			return "", &NotShimError{Path: entry}
		}
	}
	// Made beside the entry and renamed over it, so that a git running meanwhile finds
	// either the old entry or the new one.
	tmp := filepath.Join(dir, ".refretry-shim-"+EntryName+".tmp")
	_ = os.Remove(tmp)
	if err := link(self, tmp); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, entry); err != nil {
		_ = os.Remove(tmp)
		return "", err
	}
	return entry, nil
}

// Uninstall removes the shim entry from dir, and dir itself if that leaves it empty.
// removed is false when there was no entry.
func Uninstall(dir, self string) (removed bool, err error) {
	entry := filepath.Join(dir, EntryName)
	if _, err := os.Lstat(entry); errors.Is(err, os.ErrNotExist) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	if !isShim(entry, self) {
		return false, &NotShimError{Path: entry}
	}
	if err := os.Remove(entry); err != nil {
		return false, err
	}
	_ = os.Remove(dir) // only succeeds when empty
	return true, nil
}

// isShim reports whether entry is a refretry shim: the same file as self (a link to
// it), a symbolic link to an executable named refretry (another version), or a copy
// with self's content.
func isShim(entry, self string) bool {
	if sameFile(entry, self) {
		return true
	}
	if target, err := os.Readlink(entry); err == nil {
		base := strings.ToLower(filepath.Base(target))
		return base == "refretry" || base == "refretry.exe"
	}
	a, err := os.ReadFile(entry)
	if err != nil {
		return false
	}
	b, err := os.ReadFile(self)
	return err == nil && bytes.Equal(a, b)
}

// copyFile copies target to a new executable file entry.
func copyFile(target, entry string) error {
	src, err := os.Open(target)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenFile(entry, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return err
	}
	return dst.Close()
}
