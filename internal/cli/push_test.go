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
		{[]string{"origin", "--", "--rebase"}, false, false, []string{"origin", "--", "--rebase"}},
		{[]string{"--force-with-lease", "origin", "main"}, false, false, []string{"--force-with-lease", "origin", "main"}},
		{[]string{"--no-atomic", "--rebase", "--repo", "--no-atomic"}, true, true, []string{"--repo", "--no-atomic"}},
	}
	for _, tc := range tests {
		var c PushCmd
		rest := c.takeOptions(tc.args)
		if c.NoAtomic != tc.noAtomic || c.Rebase != tc.rebase || !slices.Equal(rest, tc.rest) {
			t.Errorf("takeOptions(%q) = %v %v %q", tc.args, c.NoAtomic, c.Rebase, rest)
		}
	}
}
