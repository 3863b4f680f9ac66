//go:build windows

package shim

// External is a git-<name> program git would run for a call. On Windows the shim does
// not run one itself: git finds git-<name>.exe its own way there, and every call that
// is not update-ref or fetch goes to the real git as it is.
type External struct {
	Path string
	Args []string
	Dir  string
	Env  []string
}

// LookExternal reports false on Windows: the call goes to the real git.
func LookExternal(c Call, env []string, realGit, self string) (External, bool) {
	return External{}, false
}

// RunExternal is never reached on Windows (LookExternal finds nothing).
func RunExternal(x External) (code int, started bool) { return 0, false }
