package cli

import (
	"slices"
	"testing"
)

func TestPushSplitArgs(t *testing.T) {
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
	}
	for _, tc := range tests {
		na, rb, rest := splitPushArgs(tc.args)
		if na != tc.noAtomic || rb != tc.rebase || !slices.Equal(rest, tc.rest) {
			t.Errorf("splitPushArgs(%q) = %v %v %q", tc.args, na, rb, rest)
		}
	}
}
