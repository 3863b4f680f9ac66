package cli

import (
	"slices"
	"testing"
)

func TestPushTakeOptions(t *testing.T) {
	t.Parallel()
	own, word, rest := splitArgs([]string{"--timeout", "5s", "push", "--rebase", "origin", "main"})
	if !slices.Equal(own, []string{"--timeout", "5s"}) || word != "push" || !slices.Equal(rest, []string{"--rebase", "origin", "main"}) {
		t.Errorf("splitArgs = %q %q %q", own, word, rest)
	}
	tests := []struct {
		args             []string
		noAtomic, rebase bool
		rest             []string
	}{
		{[]string{"--rebase", "origin", "main"}, false, true, []string{"origin", "main"}},
		{[]string{"origin", "--no-atomic", "main"}, true, false, []string{"origin", "main"}},
		{[]string{"-o", "--rebase", "origin"}, false, false, []string{"-o", "--rebase", "origin"}},
		{[]string{"-fo", "--rebase", "origin"}, false, false, []string{"-fo", "--rebase", "origin"}},
		{[]string{"-ofoo", "--rebase", "origin"}, false, true, []string{"-ofoo", "origin"}},
		{[]string{"origin", "--", "--rebase"}, false, false, []string{"origin", "--", "--rebase"}},
		{[]string{"--force-with-lease", "origin", "main"}, false, false, []string{"--force-with-lease", "origin", "main"}},
		{[]string{"--no-atomic", "--rebase", "--repo", "--no-atomic"}, true, true, []string{"--repo", "--no-atomic"}},
	}
	for _, tc := range tests {
		var c PushCmd
		rest, err := c.takeOptions(tc.args)
		if err != nil || c.NoAtomic != tc.noAtomic || c.Rebase != tc.rebase || !slices.Equal(rest, tc.rest) {
			t.Errorf("takeOptions(%q) = %v %v %q %v", tc.args, c.NoAtomic, c.Rebase, rest, err)
		}
	}
	for _, tc := range []struct {
		args       []string
		regenerate string
		rest       []string
	}{
		{[]string{"--regenerate", "make results", "origin", "HEAD:main"}, "make results", []string{"origin", "HEAD:main"}},
		{[]string{"origin", "--regenerate=./gen.sh --all", "main"}, "./gen.sh --all", []string{"origin", "main"}},
		{[]string{"--rebase", "--regenerate", "--rebase", "origin"}, "--rebase", []string{"origin"}},
		{[]string{"origin", "--", "--regenerate", "x"}, "", []string{"origin", "--", "--regenerate", "x"}},
	} {
		var c PushCmd
		rest, err := c.takeOptions(tc.args)
		if err != nil || c.Regenerate != tc.regenerate || !slices.Equal(rest, tc.rest) {
			t.Errorf("takeOptions(%q) = %q %q %v", tc.args, c.Regenerate, rest, err)
		}
	}
	var c PushCmd
	if _, err := c.takeOptions([]string{"origin", "main", "--regenerate"}); err == nil || err.Error() != "push: --regenerate needs a value" {
		t.Errorf("--regenerate without a value: %v", err)
	}
	if _, err := c.takeOptions([]string{"--rebase=yes", "origin"}); err != nil {
		t.Errorf("--rebase=yes is git's to judge: %v", err)
	}
}

// TestGatherArgs: push --gather's git arguments, an option's value kept with it.
func TestGatherArgs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args                []string
		opts                []string
		remote, src, branch string
	}{
		{[]string{"origin", "main"}, nil, "origin", "HEAD", "main"},
		{[]string{"-o", "ci.skip", "origin", "HEAD:refs/heads/main"}, []string{"-o", "ci.skip"}, "origin", "HEAD", "main"},
		{[]string{"-fo", "x", "origin", "abc:main"}, []string{"-fo", "x"}, "origin", "abc", "main"},
		{[]string{"-ox", "origin", "main"}, []string{"-ox"}, "origin", "HEAD", "main"},
	} {
		opts, remote, src, branch, err := gatherArgs(tc.args)
		if err != nil || !slices.Equal(opts, tc.opts) || remote != tc.remote || src != tc.src || branch != tc.branch {
			t.Errorf("gatherArgs(%q) = %q %q %q %q %v", tc.args, opts, remote, src, branch, err)
		}
	}
}
