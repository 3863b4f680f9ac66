package transaction

import (
	"github.com/refretry/refretry/internal/repo"

	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/refretry/refretry/internal/platform"
)

// inspectLock fills in what the file system says about a held lock: its age, the
// holder pid from a ~pid.lock file, and whether the holder is known to be gone (a
// ~pid.lock naming a dead local process, or a lock older than staleAfter). A lock that
// has disappeared meanwhile is left as it is: it was contention, and it is over.
func inspectLock(l *LockedError, staleAfter time.Duration, now time.Time) {
	if l.Lock == "" {
		return
	}
	fi, err := os.Stat(l.Lock)
	if err != nil {
		return
	}
	l.Age = now.Sub(fi.ModTime())
	if pid, ok := readPIDFile(strings.TrimSuffix(l.Lock, ".lock") + "~pid.lock"); ok {
		l.PID = pid
		if !l.Stale && processGone(pid) {
			l.Stale = true
			l.StaleReason = "its holder, process " + strconv.Itoa(pid) + " (from the ~pid.lock file), is no longer running"
		}
	}
	if !l.Stale && staleAfter > 0 && l.Age > staleAfter {
		l.Stale = true
		l.StaleReason = "it is older than the stale-after limit of " + staleAfter.String()
	}
}

// readPIDFile reads git's "pid <n>" lock-holder file.
func readPIDFile(path string) (int, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	s, ok := strings.CutPrefix(string(bytes.TrimSpace(b)), "pid ")
	if !ok {
		return 0, false
	}
	pid, err := strconv.Atoi(s)
	return pid, err == nil && pid > 0
}

// processGone reports whether no local process has this pid. Like git, it can only see
// this host's processes in this pid namespace.
func processGone(pid int) bool {
	return platform.ProcessGone(pid)
}

// reftableLock finds tables.list.lock for the repository git would use: reftable's
// message names no file. Per-worktree refs have their own stack in the worktree's git
// directory, so a lock there is found too.
func (r *run) reftableLock(ctx context.Context) string {
	d, ok := r.repo(ctx)
	if !ok {
		return ""
	}
	path := ""
	for _, dir := range []string{d.CommonDir, d.GitDir} {
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

// repo returns the repository's directories: found in-process when that is certain,
// else from git rev-parse. The answer is cached.
func (r *run) repo(ctx context.Context) (repo.Dirs, bool) {
	if r.repoKnown {
		return r.repoDirs, r.repoDirs.GitDir != ""
	}
	r.repoKnown = true
	if d, ok := r.discovered(); ok {
		r.repoDirs = d
		return d, true
	}
	out, err := r.command(ctx, "rev-parse", "--path-format=absolute", "--git-common-dir", "--git-dir").Output()
	if err != nil {
		return repo.Dirs{}, false
	}
	common, gitDir, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	r.repoDirs = repo.Dirs{GitDir: gitDir, CommonDir: common}
	return r.repoDirs, gitDir != ""
}

// discovered is repo.Discover's answer for this Runner, looked up once: the line and
// the stale-lock check both ask.
func (r *run) discovered() (repo.Dirs, bool) {
	if r.discovery == nil {
		d := repo.Dirs{GitDir: r.GitDir, CommonDir: r.CommonDir}
		if d.GitDir == "" {
			d, _ = repo.Discover(r.Dirs, r.Env) // the zero Dirs when not found
		}
		r.discovery = &d
	}
	return *r.discovery, r.discovery.GitDir != ""
}

// reftableDir is the repository's reftable directory when refretry can tell, without
// starting a process, that the repository uses reftable; "" otherwise.
func (r *run) reftableDir() string {
	d, ok := r.discovered()
	if !ok || !d.Reftable() {
		return ""
	}
	return filepath.Join(d.CommonDir, "reftable")
}
