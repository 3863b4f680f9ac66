package shim

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// HandoffVar is set in the environment of the git the shim runs: "env" when that git
// came from REFRETRY_GIT, else the index in PATH of the directory it came from. If
// that git is itself a shim (another copy, or a link to another refretry), it finds
// the variable naming itself and looks only further on, so that two shims on PATH
// never hand a call back and forth. Any other process ignores it: a hook's git, say,
// sees an index that does not name it.
const HandoffVar = "REFRETRY_SHIM_HANDOFF"

// BypassVar is set by refretry in the environment of every git it runs. A shim that
// finds it hands the call to the real git whatever the command: refretry never runs
// itself as its own git (which would queue behind itself for the lock), and a hook of a
// git that refretry runs does not wait behind that refretry either.
const BypassVar = "REFRETRY_SHIM_BYPASS"

// ErrNotFound is returned by Find when no git other than the shim itself is found.
var ErrNotFound = errors.New("no git found on PATH other than the shim itself")

// Found is the real git and the value of HandoffVar to run it with.
type Found struct {
	Path    string
	Handoff string
}

// Find returns the git the shim at self (this executable, as os.Executable gives it)
// stands in for: REFRETRY_GIT when it is set and is not self, else the first git on
// PATH that is not self. Files are compared by identity (device and inode), so a PATH
// that lists the shim's directory twice, or reaches it through a symbolic link, still
// leads past it. PATH entries that are empty or relative are skipped: the shim never
// runs a git from the current directory.
func Find(getenv func(string) string, self string) (Found, error) {
	if _, err := os.Stat(self); err != nil {
		return Found{}, fmt.Errorf("cannot identify the shim's own executable: %w", err)
	}
	isSelf := func(p string) bool { return sameFile(p, self) }
	dirs := filepath.SplitList(getenv("PATH"))
	start, useEnv := 0, true
	switch h := getenv(HandoffVar); h {
	case "":
	case "env":
		// Another shim ran this one as REFRETRY_GIT: that variable leads back here.
		if g := getenv("REFRETRY_GIT"); g != "" && isSelf(lookup(g)) {
			useEnv = false
		}
	default:
		if i, err := strconv.Atoi(h); err == nil && i >= 0 && i < len(dirs) && filepath.IsAbs(dirs[i]) {
			for _, name := range gitNames {
				if isSelf(filepath.Join(dirs[i], name)) {
					start, useEnv = i+1, false // another shim ran this one from PATH
					break
				}
			}
		}
	}
	if g := getenv("REFRETRY_GIT"); g != "" && useEnv {
		p := lookup(g)
		if p == "" {
			return Found{}, fmt.Errorf("REFRETRY_GIT=%s: not found", g)
		}
		if !isSelf(p) {
			return Found{Path: p, Handoff: "env"}, nil
		}
	}
	for i := start; i < len(dirs); i++ {
		if !filepath.IsAbs(dirs[i]) {
			continue
		}
		for _, name := range gitNames {
			p := filepath.Join(dirs[i], name)
			if executable(p) && !isSelf(p) {
				return Found{Path: p, Handoff: strconv.Itoa(i)}, nil
			}
		}
	}
	return Found{}, ErrNotFound
}

// lookup resolves REFRETRY_GIT as refretry does: a path as it is, a bare name on PATH.
// "" when a name is not found.
func lookup(g string) string {
	if strings.ContainsRune(g, '/') || strings.ContainsRune(g, filepath.Separator) {
		return g
	}
	p, err := exec.LookPath(g)
	if err != nil {
		return ""
	}
	return p
}

// sameFile reports whether paths a and b name one file (device and inode), following
// symbolic links.
func sameFile(a, b string) bool {
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	return err == nil && os.SameFile(fa, fb)
}

// Invoked reports whether argv0 (the name this process was started under) makes it the
// shim: its base name is git, or git.exe in any case.
func Invoked(argv0 string) bool {
	base := filepath.Base(argv0)
	return base == "git" || strings.EqualFold(base, "git.exe")
}
