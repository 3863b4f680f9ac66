package transaction

import (
	"context"
	"path/filepath"
	"strings"

	"github.com/refretry/refretry/internal/repo"
)

// reftableLock finds tables.list.lock for the repository git would use: reftable's
// message names no file.
func (r *run) reftableLock(ctx context.Context) string {
	d, ok := r.repo(ctx)
	if !ok {
		return ""
	}
	return d.ReftableLock()
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
		d := repo.Dirs{GitDir: r.cli.GitDir, CommonDir: r.cli.CommonDir}
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
