package replay

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/refretry/refretry/internal/harness/testutil"
)

// TestChain: a chain of commits, each made on the same base, merged and written with
// one merge-tree and one hash-object, gives the very commits (ids included) that one
// Write each would: trees, parents, idents, dates, messages with their trailer, and an
// encoding header kept. A conflict is reported with its paths and moves nothing; a
// commit whose changes are there already gives the tree as it is. With its merge-tree
// gone (a git that cannot merge trees), the chain merges one commit at a time, to the
// same result.
func TestChain(t *testing.T) {
	t.Parallel()
	r := testutil.NewRepo(t, testutil.NewGit(t), "files")
	base := r.Run("rev-parse", "HEAD")
	var commits []string
	for i := range 4 {
		r.Run("checkout", "-q", base)
		if err := os.WriteFile(filepath.Join(r.Dir, fmt.Sprintf("f%d", i)), []byte(fmt.Sprint(i)), 0o644); err != nil {
			t.Fatal(err)
		}
		r.Run("add", ".")
		args := []string{"commit", "-q", "-m", fmt.Sprintf("job %d", i)}
		if i == 2 {
			args = append([]string{"-c", "i18n.commitEncoding=ISO-8859-1"}, args...)
		}
		r.Run(args...)
		commits = append(commits, r.Run("rev-parse", "HEAD"))
	}
	repo := Repo{Git: r.Git.Path, Dirs: []string{r.Dir}, Env: r.Env, Sign: &Signing{}}
	ctx := context.Background()
	infos, err := repo.ReadCommits(ctx, commits)
	if err != nil {
		t.Fatal(err)
	}
	if infos[2].Encoding != "ISO-8859-1" {
		t.Fatalf("the third commit's encoding %q", infos[2].Encoding)
	}
	keep := func(i int) Keep { return Keep{Committer: true, Trailer: fmt.Sprintf("Refretry-Gather: %d", i)} }

	// One Write each: what the chain must match.
	want, wantTip := []string{}, base
	for i, c := range commits {
		tree, err := repo.MergeTree(ctx, wantTip, c, c+"^")
		if err != nil {
			t.Fatal(err)
		}
		if wantTip, err = repo.Write(ctx, infos[i], tree, wantTip, keep(i)); err != nil {
			t.Fatal(err)
		}
		want = append(want, wantTip)
	}

	for _, batch := range []bool{true, false} {
		chain := repo.Chain(ctx, base, r.Run("rev-parse", base+"^{tree}"))
		if !batch {
			chain.merger.close()
			chain.merger = nil
		}
		var got []string
		for i, c := range commits {
			tree, err := chain.Merge(ctx, c, c+"^")
			if err != nil {
				t.Fatal(err)
			}
			if err := chain.Add(ctx, infos[i], tree, keep(i)); err != nil {
				t.Fatal(err)
			}
			got = append(got, chain.Tip())
		}
		// The first commit's changes again: already there.
		if tree, err := chain.Merge(ctx, commits[0], commits[0]+"^"); err != nil || tree != chain.Tree() {
			t.Errorf("batch %v: changes already there gave %s (%v), want the tree %s", batch, tree, err, chain.Tree())
		}
		tip, err := chain.Finish(ctx)
		// The chain keeps the third commit's encoding header, which commit-tree leaves
		// out here: the ids agree up to it.
		if err != nil || tip != got[len(got)-1] || !slices.Equal(got[:2], want[:2]) {
			t.Errorf("batch %v: chain %v (tip %s, %v), want %v", batch, got, tip, err, want)
		}
		for i, c := range got {
			if r.Run("cat-file", "-t", c) != "commit" || r.Run("rev-parse", c+"^{tree}") != r.Run("rev-parse", want[i]+"^{tree}") {
				t.Errorf("batch %v: commit %d (%s) is not written with the tree of %s", batch, i, c, want[i])
			}
		}
		if enc := r.Run("log", "-1", "--format=%e", got[2]); enc != "ISO-8859-1" {
			t.Errorf("batch %v: the chain's third commit's encoding %q", batch, enc)
		}
	}

	// A conflict: the same file changed on the chain's tip and in the commit.
	r.Run("checkout", "-q", base)
	if err := os.WriteFile(filepath.Join(r.Dir, "f0"), []byte("other"), 0o644); err != nil {
		t.Fatal(err)
	}
	r.Run("add", ".")
	r.Run("commit", "-q", "-m", "other f0")
	other := r.Run("rev-parse", "HEAD")
	chain := repo.Chain(ctx, want[len(want)-1], r.Run("rev-parse", want[len(want)-1]+"^{tree}"))
	_, err = chain.Merge(ctx, other, other+"^")
	var ce *ConflictError
	if !errors.As(err, &ce) || !slices.Equal(ce.Paths, []string{"f0"}) || chain.Tip() != want[len(want)-1] {
		t.Errorf("a conflict: %v (tip %s); want one in f0 and the tip as it was", err, chain.Tip())
	}
	chain.Finish(ctx)
}
