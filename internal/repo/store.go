package repo

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Store is where git keeps a repository's refs. Since git 2.54 the refs may live
// outside the repository, in a store named by extensions.refStorage
// (<format>://<path>, written by git init or clone) or by GIT_REFERENCE_BACKEND,
// which overrides the config for every git that sees it. Every lock refretry names,
// judges or queues on is in a Store's directories, never assumed to be in the git
// directory.
type Store struct {
	Format string // "files" or "reftable"
	// Dir holds the refs every worktree shares: on files the loose refs and
	// packed-refs, on reftable the main stack (Dir/reftable). It is the common
	// directory unless the refs live elsewhere.
	Dir string
	// WorktreeDir holds the refs of this worktree alone (HEAD, refs/bisect/,
	// refs/worktree/, refs/rewritten/, pseudorefs): the git directory, or
	// <Dir>/worktrees/<id> for a linked worktree of a store elsewhere; on reftable a
	// linked worktree has a stack of its own there.
	WorktreeDir string
}

// Reftable reports whether the refs are kept in reftable.
func (s Store) Reftable() bool { return s.Format == "reftable" }

// ReftableDir is the directory of the main reftable stack.
func (s Store) ReftableDir() string { return filepath.Join(s.Dir, "reftable") }

// ReftableLock is the path of the reftable stack's lock, tables.list.lock: the one
// that is held, the main stack's or (per-worktree refs have their own stack) the
// worktree's, else the main stack's. reftable's lock message names no file, so this
// is where refretry looks.
func (s Store) ReftableLock() string {
	path := ""
	for _, dir := range []string{s.Dir, s.WorktreeDir} {
		if dir == "" {
			continue
		}
		p := filepath.Join(dir, "reftable", "tables.list.lock")
		if path == "" {
			path = p
		}
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return path
}

// RefLock is the lock file git takes for ref on the files backend: in WorktreeDir
// for a per-worktree ref, else in Dir. "" on reftable, whose one lock is the stack's.
func (s Store) RefLock(ref string) string {
	if s.Reftable() || s.Dir == "" {
		return ""
	}
	dir := s.Dir
	if !strings.HasPrefix(ref, "refs/") || strings.HasPrefix(ref, "refs/bisect/") ||
		strings.HasPrefix(ref, "refs/worktree/") || strings.HasPrefix(ref, "refs/rewritten/") {
		dir = s.WorktreeDir
	}
	return dir + "/" + ref + ".lock"
}

// ReferenceBackendVar is git's environment variable that names the ref store,
// overriding extensions.refStorage.
const ReferenceBackendVar = "GIT_REFERENCE_BACKEND"

// StorageArgs is the git command that prints extensions.refStorage as git reads it
// to find the refs: from the repository's own config file (the common directory's,
// without includes), the last value winning; it exits 1 printing nothing when the
// key is unset. (git rev-parse --show-ref-format prints the format but not where the
// store is; nothing else in git 2.55 says.)
var StorageArgs = []string{"config", "--local", "--get", "extensions.refstorage"}

// Locate finds the repository's ref store. Without starting git when it can be
// certain: GIT_REFERENCE_BACKEND in env, which every git that sees it obeys, or the
// layout git makes when the refs are in the common directory (reftable/tables.list
// there, or a refs/heads directory: a store elsewhere leaves only a stub file there).
// Otherwise it asks git with ask (StorageArgs run by the caller's git, the value it
// printed, "" when unset); a nil ask, or a failed one, gives ok false.
func (d Dirs) Locate(env []string, ask func() (string, error)) (Store, bool) {
	if d.CommonDir == "" {
		return Store{}, false
	}
	if v, set := lookupEnv(env, ReferenceBackendVar); set {
		if v == "" {
			return Store{}, false // git stops at once: "unknown ref storage format"
		}
		s, err := d.StoreOf(v)
		return s, err == nil
	}
	if _, err := os.Stat(filepath.Join(d.CommonDir, "reftable", "tables.list")); err == nil {
		return d.at("reftable", ""), true
	}
	if fi, err := os.Stat(filepath.Join(d.CommonDir, "refs", "heads")); err == nil && fi.IsDir() {
		return d.at("files", ""), true
	}
	if ask == nil {
		return Store{}, false
	}
	v, err := ask()
	if err != nil {
		return Store{}, false
	}
	s, err := d.StoreOf(v)
	return s, err == nil
}

// StoreOf is the store that a value of extensions.refStorage (or of
// GIT_REFERENCE_BACKEND) names for this repository, as git reads it: a format alone
// ("reftable"), or <format>://<path>, a path relative to the common directory
// resolved through its links; "" is git's default, files in the common directory.
func (d Dirs) StoreOf(value string) (Store, error) {
	format, path, hasPath := strings.Cut(value, "://")
	if format == "" {
		format = "files"
	}
	if format != "files" && format != "reftable" {
		return Store{}, fmt.Errorf("unknown ref storage format %q", format)
	}
	if !hasPath || path == "" {
		return d.at(format, ""), nil
	}
	return d.at(format, path), nil
}

// at is the store of format at path ("" for the common directory).
func (d Dirs) at(format, path string) Store {
	if path == "" {
		return Store{Format: format, Dir: d.CommonDir, WorktreeDir: d.GitDir}
	}
	dir := abs(d.CommonDir, path)
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	s := Store{Format: format, Dir: dir, WorktreeDir: dir}
	if d.GitDir != "" && filepath.Clean(d.GitDir) != filepath.Clean(d.CommonDir) {
		s.WorktreeDir = filepath.Join(dir, "worktrees", filepath.Base(d.GitDir))
	}
	return s
}

// ReadStorage runs cmd (StorageArgs, built by the caller with its git, directories
// and environment) and returns the value it printed: "" when the key is unset.
func ReadStorage(cmd *exec.Cmd) (string, error) {
	out, err := cmd.Output()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 1 && len(out) == 0 {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return strings.TrimRight(string(out), "\n"), nil
}

// lookupEnv is the value of key in env, the last one winning, as for getenv.
func lookupEnv(env []string, key string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && k == key {
			return v, true
		}
	}
	return "", false
}
