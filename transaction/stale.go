package transaction

import (
	"context"
	"strings"

	"github.com/refretry/refretry/internal/repo"
)

// reftableLock finds tables.list.lock in the ref store git uses: reftable's message
// names no file.
func (r *run) reftableLock(ctx context.Context) string {
	s, ok := r.store(ctx)
	if !ok || !s.Reftable() {
		return ""
	}
	return s.ReftableLock()
}

// store is the repository's ref store (repo.Store): the group join's, when it found
// it already; else found in-process when that is certain, else read from git
// (git config, and git rev-parse when the repository itself is not found
// in-process). It is asked only once an attempt has failed, and the answer is cached.
func (r *run) store(ctx context.Context) (repo.Store, bool) {
	if r.found.Dir != "" {
		return r.found, true
	}
	if !r.storeKnown {
		r.storeKnown = true
		if d, ok := r.repo(ctx); ok {
			r.refStore, _ = d.Locate(r.Env, func() (string, error) {
				return repo.ReadStorage(r.command(ctx, repo.StorageArgs...))
			})
		}
	}
	return r.refStore, r.refStore.Dir != ""
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
		d, _ := repo.Discover(r.Dirs, r.Env) // the zero Dirs when not found
		r.discovery = &d
	}
	return *r.discovery, r.discovery.GitDir != ""
}

// reftableDir is the directory of the repository's main reftable stack when refretry
// can tell, without starting a process, that the repository uses reftable; ""
// otherwise.
func (r *run) reftableDir() string {
	s := r.found
	if s.Dir == "" {
		d, ok := r.discovered()
		if !ok {
			return ""
		}
		s, _ = d.Locate(r.Env, nil)
	}
	if !s.Reftable() {
		return ""
	}
	return s.ReftableDir()
}

// backend is the format of the ref store the run looked up: the group join's, else
// the one a lock's lookup found; "" when it looked up none.
func (r *run) backend() string {
	if r.found.Dir != "" {
		return r.found.Format
	}
	return r.refStore.Format
}
