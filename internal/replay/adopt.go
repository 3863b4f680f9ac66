package replay

import (
	"context"
	"strconv"
	"strings"
)

// Adopt moves what from names to tip, where it is at src: the checked-out commit
// (from is HEAD, or the branch HEAD is on) with the index and the work tree, as `git
// reset --keep` moves it (it keeps uncommitted changes, or refuses when a file they
// touch differs between src and tip); another local branch with update-ref, only if
// it is still at src. It returns the name it moved ("HEAD", "refs/heads/main"), ""
// when nothing moved: from names a commit, or the work tree could not follow.
func (r Repo) Adopt(ctx context.Context, from, src, tip, reason string) string {
	branch, _ := r.Output(ctx, "symbolic-ref", "-q", "HEAD")
	full := r.FullRef(ctx, from)
	switch {
	case from == "HEAD" || (branch != "" && full == branch):
		if r.RevParse(ctx, "HEAD") != src || r.Command(ctx, r.Env, "reset", "-q", "--keep", tip).Run() != nil {
			return ""
		}
		if branch != "" {
			return branch
		}
		return "HEAD"
	case strings.HasPrefix(full, "refs/heads/"):
		if r.Command(ctx, r.Env, "update-ref", "-m", reason, full, tip, src).Run() == nil {
			return full
		}
	}
	return ""
}

// FullRef is the full name of rev when it names a ref ("main" → "refs/heads/main"),
// else "".
func (r Repo) FullRef(ctx context.Context, rev string) string {
	if strings.HasPrefix(rev, "refs/") {
		return rev
	}
	full, err := r.Output(ctx, "rev-parse", "--symbolic-full-name", rev)
	if err != nil || !strings.HasPrefix(full, "refs/") || strings.Contains(full, "\n") {
		return ""
	}
	return full
}

// Meet deepens a shallow repository's history of onto until it meets src's, with
// deepen, a fetch of onto's ref with the option it is given (--deepen=<n>). A depth-1 checkout, or a
// tool's own `git fetch --depth=1`, leaves a fetched tip without its parents, and
// then nothing tells a job's commits from the ones the remote had: a replay would
// take the job's base for one of its own. Each round deepens by 8 commits below the
// shallow boundary the first time and four times more each next, until src and onto
// have a merge base, the repository is no longer shallow, or a round brought no
// commit (the histories are unrelated: the replay then says so).
func (r Repo) Meet(ctx context.Context, src, onto string, deepen func(option string) error) error {
	count := func() string { n, _ := r.Output(ctx, "rev-list", "--count", onto); return n }
	known := "" // onto's history as counted after the last round ("" before any)
	for depth := 8; ; depth *= 4 {
		if _, err := r.Output(ctx, "merge-base", src, onto); err == nil {
			return nil
		}
		if shallow, _ := r.Output(ctx, "rev-parse", "--is-shallow-repository"); shallow != "true" {
			return nil
		}
		if known == "" {
			known = count()
		}
		if err := deepen("--deepen=" + strconv.Itoa(depth)); err != nil {
			return err
		}
		after := count()
		if after == known {
			return nil
		}
		known = after
	}
}
