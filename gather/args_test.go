package gather

import (
	"slices"
	"testing"
)

// TestReadArgs: Run's git arguments, an option's value kept with it, and what it
// cannot take.
func TestReadArgs(t *testing.T) {
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
		{[]string{"origin", "+main", "--push-option", "-q"}, []string{"--push-option", "-q"}, "origin", "HEAD", "main"},
		{[]string{"-q", "--", "-odd", "x:main"}, []string{"-q"}, "-odd", "x", "main"},
	} {
		got, err := readArgs(tc.args)
		if err != nil || !slices.Equal(got.options, tc.opts) || got.remote != tc.remote || got.source != tc.src || got.branch != tc.branch {
			t.Errorf("readArgs(%q) = %+v, %v", tc.args, got, err)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"origin"}, "takes <remote> [<src>:]<branch>, one branch"},
		{[]string{"origin", "main", "next"}, "takes <remote> [<src>:]<branch>, one branch"},
		{[]string{"origin", "-o"}, "takes <remote> [<src>:]<branch>, one branch"},
		{[]string{"origin", "HEAD:"}, "HEAD: is not [<src>:]<branch>"},
		{[]string{"origin", ":main"}, ":main is not [<src>:]<branch>"},
		{[]string{"origin", "HEAD:refs/tags/v1"}, "HEAD:refs/tags/v1 is not [<src>:]<branch>"},
	} {
		_, err := readArgs(tc.args)
		if e, ok := err.(*ArgsError); !ok || e.Error() != tc.want {
			t.Errorf("readArgs(%q): %v, want an *ArgsError %q", tc.args, err, tc.want)
		}
	}
}
