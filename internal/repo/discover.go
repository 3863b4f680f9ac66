// Package repo finds the repository a git command would use, and where git keeps its
// refs (Store), without starting git where it can be certain.
package repo

import (
	"os"
	"path/filepath"
	"strings"
)

// Dirs are the directories of the repository git would use.
type Dirs struct {
	GitDir, CommonDir string
}

// Discover finds the repository the way git's discovery does in the common cases,
// without starting a process: GIT_DIR and GIT_COMMON_DIR when set, else the nearest
// directory at or above the working directory (after the -C directories) that has a
// .git directory or gitfile, or is itself a git directory. It gives up (ok false) where
// git's rules get subtle (GIT_CEILING_DIRECTORIES, a gitfile it cannot read), and the
// caller then asks git. The result only tells refretry where to look for a lock and
// where to queue; a wrong answer cannot change what git writes.
func Discover(dirs []string, env []string) (Dirs, bool) {
	start, err := os.Getwd()
	if err != nil {
		return Dirs{}, false
	}
	for _, d := range dirs {
		if d != "" {
			start = abs(start, d)
		}
	}
	get := func(key string) string {
		v, _ := lookupEnv(env, key)
		return v
	}
	if get("GIT_CEILING_DIRECTORIES") != "" || get("GIT_DISCOVERY_ACROSS_FILESYSTEM") != "" {
		return Dirs{}, false
	}
	gitDir := ""
	if d := get("GIT_DIR"); d != "" {
		gitDir = abs(start, d)
	} else {
		for dir := start; ; dir = filepath.Dir(dir) {
			if g, ok, fail := dotGit(dir); fail {
				return Dirs{}, false
			} else if ok {
				gitDir = g
				break
			}
			if isGitDir(dir) {
				gitDir = dir
				break
			}
			if dir == filepath.Dir(dir) {
				return Dirs{}, false
			}
		}
	}
	common := gitDir
	if d := get("GIT_COMMON_DIR"); d != "" {
		common = abs(start, d)
	} else if b, err := os.ReadFile(filepath.Join(gitDir, "commondir")); err == nil {
		common = abs(gitDir, strings.TrimRight(string(b), "\r\n"))
	}
	return Dirs{GitDir: gitDir, CommonDir: common}, true
}

// dotGit looks for dir/.git: a directory, or a gitfile naming one. fail means git
// would have found something there that refretry does not read with certainty.
func dotGit(dir string) (gitDir string, ok, fail bool) {
	p := filepath.Join(dir, ".git")
	fi, err := os.Stat(p)
	switch {
	case err != nil:
		return "", false, false
	case fi.IsDir():
		return p, isGitDir(p), false // an invalid .git directory is passed over, as git does
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return "", false, true
	}
	target, found := strings.CutPrefix(strings.TrimRight(string(b), "\r\n"), "gitdir: ")
	if !found || target == "" {
		return "", false, true
	}
	return abs(dir, target), true, false
}

// isGitDir is git's quick test for a repository directory: HEAD and objects/.
func isGitDir(dir string) bool {
	if _, err := os.Stat(filepath.Join(dir, "HEAD")); err != nil {
		return false
	}
	fi, err := os.Stat(filepath.Join(dir, "objects"))
	return err == nil && fi.IsDir()
}

func abs(base, p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(base, p)
}
